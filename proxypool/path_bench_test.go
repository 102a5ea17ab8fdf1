package proxypool

// The pooled path's cost per message on each side, measured apart: the
// other side is a child process, so the CPU time (cpu-ns/msg, from
// getrusage) and the allocations (allocs/op, one op = one message) are
// those of one side only. Payloads are made once and reused: allocs/op is
// the runtime's own, besides the user's message on the sender and besides
// the decoded message's own allocations on the receiver.
//
//	go test -run '^$' -bench 'SenderPath|ReceiverPath' -benchtime 1000000x -count 6 ./proxypool | tee path.txt
//	benchstat path.txt

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"google.golang.org/protobuf/proto"
)

const pathWriters = 1000

// benchPayloads are the messages both path benchmarks send: 200 bytes of
// bytes (the runtime's cost alone), and an Echo of about 200 bytes with
// two strings (what a small struct costs to encode and decode); and the
// same two with vtprotobuf's methods (the fast codec).
var benchPayloads = []struct {
	name string
	msg  proto.Message
}{
	{"bytes", &testpb.Blob{Data: make([]byte, 200)}},
	{"echo", &testpb.Echo{Text: strings.Repeat("x", 180), N: 1 << 40, From: "a"}},
	{"bytes-vt", &testpb.VTBlob{Data: make([]byte, 200)}},
	{"echo-vt", &testpb.VTEcho{Text: strings.Repeat("x", 180), N: 1 << 40, From: "a"}},
}

// cpuNow is this process's user+system CPU time.
func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSenderPath: 1,000 goroutines, each with its own Sender handle,
// send b.N messages in all through the pool to one named actor on a child
// process; timed until the child has counted every one.
func BenchmarkSenderPath(b *testing.B) {
	child := testnode.Start(b, testnode.Options{Name: "b"})
	a := startNode(b, "a", nodeOpts{poolSize: 2, cfg: Config{ManualConnect: true}, seeds: []string{child.Seed()}})
	ctx := context.Background()
	if err := a.pool.StartConnection(ctx, "b"); err != nil {
		b.Fatal(err)
	}
	waitStatus(b, a.pool, "b", Connected)
	senders := make([]*actor.Sender, pathWriters)
	for i := range senders {
		senders[i] = a.sys.NewSender()
	}
	for _, p := range benchPayloads {
		b.Run("payload="+p.name, func(b *testing.B) {
			base := sinkCountLocalB(b, a)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuNow(b)
			var wg sync.WaitGroup
			for i := range senders {
				n := b.N / pathWriters
				if i < b.N%pathWriters {
					n++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						senders[i].SendNamed("b", "sink", p.msg)
					}
				}()
			}
			wg.Wait()
			for sinkCountLocalB(b, a) < base+int64(b.N) {
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuNow(b)-cpu0)/float64(b.N), "cpu-ns/msg")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkReceiverPath: a child process sends b.N messages in all from
// 1,000 goroutines (each its own Sender) through its pool to one named
// actor here; timed until that actor has counted every one.
func BenchmarkReceiverPath(b *testing.B) {
	a := startNode(b, "a", nodeOpts{poolSize: 2, cfg: Config{ManualConnect: true}})
	child := testnode.Start(b, testnode.Options{Name: "b"})
	var got atomic.Int64
	if _, err := a.sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if _, ok := c.Message().(proto.Message); ok {
			got.Add(1)
		}
	}), "rsink"); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := a.n.Connect(ctx, "b", child.Addr); err != nil {
		b.Fatal(err)
	}
	// The child builds its pool toward us once it has seen our link.
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := a.sys.Call(ctx, "b", poolStatusFn, &testpb.Echo{Text: "a"})
		if err != nil {
			b.Fatal(err)
		}
		if Status(v.(*testpb.Echo).N) == Connected {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the child's pool toward a never connected")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, p := range benchPayloads {
		b.Run("payload="+p.name, func(b *testing.B) {
			base := got.Load()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuNow(b)
			arg := &testpb.Echo{Text: "a rsink " + strconv.Itoa(pathWriters) + " " + p.name, N: int64(b.N)}
			if _, err := a.sys.Call(ctx, "b", "blast", arg); err != nil {
				b.Fatal(err)
			}
			for got.Load() < base+int64(b.N) {
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuNow(b)-cpu0)/float64(b.N), "cpu-ns/msg")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
