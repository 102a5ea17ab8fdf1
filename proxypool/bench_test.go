package proxypool

// Pooled against native, two processes on loopback, in one run:
//
//	go test -run '^$' -bench PooledVsNative -benchtime 2000000x -count 6 ./proxypool | tee pool.txt
//	benchstat -col /path pool.txt

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
)

const benchSenders = 10000

// BenchmarkPooledVsNative: 10,000 concurrent senders, each with its own
// sender handle and its own receiver actor on the other process, send a
// ~200-byte protobuf message; timed until the receiving process has
// counted every one (delivery, not enqueueing).
func BenchmarkPooledVsNative(b *testing.B) {
	child := testnode.Start(b, testnode.Options{Name: "b"})
	a := startNode(b, "a", nodeOpts{poolSize: 2, cfg: Config{ManualConnect: true}, seeds: []string{child.Seed()}})
	ctx := context.Background()
	if _, err := a.sys.Call(ctx, "b", "spawn_sinks", &testpb.Echo{N: benchSenders}); err != nil {
		b.Fatal(err)
	}
	payload := &testpb.Echo{Text: strings.Repeat("x", 180), N: 1 << 40, From: "a"}
	senders := make([]*actor.Sender, benchSenders)
	names := make([]string, benchSenders)
	for i := range senders {
		senders[i] = a.sys.NewSender()
		names[i] = "sink/" + strconv.Itoa(i)
	}
	run := func(b *testing.B) {
		base := sinkCountLocalB(b, a)
		b.ReportAllocs()
		b.ResetTimer()
		var wg sync.WaitGroup
		per := b.N/benchSenders + 1
		for i := range senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range per {
					senders[i].SendNamed("b", names[i], payload)
				}
			}()
		}
		wg.Wait()
		want := base + int64(per*benchSenders)
		for sinkCountLocalB(b, a) < want {
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		b.ReportMetric(float64(per*benchSenders)/b.Elapsed().Seconds(), "msgs/s")
	}
	b.Run("path=native", func(b *testing.B) {
		if a.pool.ConnectionInfo("b").Status != NotConnected {
			b.Fatal("a pool exists")
		}
		run(b)
	})
	b.Run("path=pooled", func(b *testing.B) {
		if err := a.pool.StartConnection(ctx, "b"); err != nil {
			b.Fatal(err)
		}
		waitStatus(b, a.pool, "b", Connected)
		run(b)
		st := a.pool.Stats("b")
		b.ReportMetric(st.MeanBatch, "msgs/batch")
		if err := a.pool.StopConnection(ctx, "b"); err != nil {
			b.Fatal(err)
		}
	})
}

func sinkCountLocalB(b *testing.B, a *tnode) int64 {
	v, err := a.sys.Call(context.Background(), "b", "sink_get", &testpb.Echo{})
	if err != nil {
		b.Fatal(err)
	}
	return v.(*testpb.Echo).N
}
