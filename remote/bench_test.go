package remote_test

// Native path over loopback, two processes:
//   go test -run '^$' -bench Native -benchmem -count 6 ./remote | tee native.txt; benchstat native.txt

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
)

func benchPair(b *testing.B) *actor.System {
	child := testnode.Start(b, testnode.Options{Name: "b"})
	sys, n := testnode.Local(b, testnode.Options{Name: "a", Seeds: []string{child.Seed()}})
	if err := n.Connect(context.Background(), "b", ""); err != nil {
		b.Fatal(err)
	}
	return sys
}

func sinkCount(b *testing.B, sys *actor.System) int64 {
	v, err := sys.Call(context.Background(), "b", "sink_get", &testpb.Echo{})
	if err != nil {
		b.Fatal(err)
	}
	return v.(*testpb.Echo).N
}

// waitSink waits until b's sink actor has counted want messages: the
// benchmark measures delivery, not enqueueing.
func waitSink(b *testing.B, sys *actor.System, want int64) {
	deadline := time.Now().Add(60 * time.Second)
	for sinkCount(b, sys) < want {
		if time.Now().After(deadline) {
			b.Fatalf("sink has %d of %d", sinkCount(b, sys), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkNativeSend: one sender, b.N sends of a small message to an actor
// on the other process; timed until the last one is delivered.
func BenchmarkNativeSend(b *testing.B) {
	sys := benchPair(b)
	base := sinkCount(b, sys)
	msg := &testpb.Echo{Text: "0123456789abcdef", N: 1}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		sys.SendNamed("b", "sink", msg)
	}
	waitSink(b, sys, base+int64(b.N))
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkNativeSendParallel: 64 senders at once.
func BenchmarkNativeSendParallel(b *testing.B) {
	sys := benchPair(b)
	base := sinkCount(b, sys)
	msg := &testpb.Echo{Text: "0123456789abcdef", N: 1}
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/64 + 1
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				sys.SendNamed("b", "sink", msg)
			}
		}()
	}
	wg.Wait()
	waitSink(b, sys, base+int64(per*64))
	b.ReportMetric(float64(per*64)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkNativeCall: round-trip latency of one call at a time.
func BenchmarkNativeCall(b *testing.B) {
	sys := benchPair(b)
	arg := &testpb.Echo{Text: "x"}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := sys.Call(ctx, "b", "echo", arg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNativeCallParallel: calls from 64 goroutines at once.
func BenchmarkNativeCallParallel(b *testing.B) {
	sys := benchPair(b)
	arg := &testpb.Echo{Text: "x"}
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := sys.Call(ctx, "b", "echo", arg); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}
