package bridge_test

// Two bridged nodes in one process over loopback TCP (a proxy pool each).
// Compare runs with benchstat:
//
//	cd protoactor && go test -run '^$' -bench . -benchmem -count 6 ./bridge

import (
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/mailroom-go/mailroom/protoactor/bridge"
	"github.com/mailroom-go/mailroom/protoactor/internal/testpb"
)

// payload is ~200 bytes, like the bench harness's runtime-cost payload.
var payload = &testpb.Ping{Text: strings.Repeat("x", 200)}

// counter counts Pings and answers requests; done closes when the count
// reaches want.
type counter struct {
	n    atomic.Int64
	want atomic.Int64
	done chan struct{}
}

func (c *counter) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*testpb.Ping); ok {
		if ctx.Sender() != nil {
			ctx.Respond(&testpb.Pong{})
			return
		}
		if c.n.Add(1) == c.want.Load() {
			close(c.done)
		}
	}
}

func benchPair(b *testing.B, targets int) (*bridge.Node, []*actor.PID, *counter) {
	a, r := pair(b)
	n := &counter{done: make(chan struct{})}
	n.want.Store(int64(b.N))
	pids := make([]*actor.PID, targets)
	for i := range pids {
		name := "r" + strconv.Itoa(i)
		if _, err := r.Actors.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return n }), name); err != nil {
			b.Fatal(err)
		}
		pids[i] = actor.NewPID(bridge.NodeAddress("b"), name)
		// Open the session before timing.
		if _, err := bridge.Result(a.Actors.Root.RequestFuture(pids[i], payload, futureTimeout)); err != nil {
			b.Fatal(err)
		}
	}
	return a, pids, n
}

// BenchmarkSend: fire-and-forget sends, timed until the receiving node
// has counted them all. ns/op is per message.
func BenchmarkSend(b *testing.B) {
	for _, targets := range []int{1, 16} {
		b.Run("targets="+strconv.Itoa(targets), func(b *testing.B) {
			a, pids, n := benchPair(b, targets)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for i := range b.N {
				a.Actors.Root.Send(pids[i%targets], payload)
			}
			<-n.done
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkRequestFuture: one request at a time (the round trip), and
// many at once.
func BenchmarkRequestFuture(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		a, pids, _ := benchPair(b, 1)
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cpuTime()
		for range b.N {
			if _, err := bridge.Result(a.Actors.Root.RequestFuture(pids[0], payload, futureTimeout)); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpu)
	})
	b.Run("parallel", func(b *testing.B) {
		a, pids, _ := benchPair(b, 16)
		var next atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(16)
		b.ResetTimer()
		cpu := cpuTime()
		defer reportCPU(b, cpu)
		b.RunParallel(func(pb *testing.PB) {
			pid := pids[next.Add(1)%int64(len(pids))]
			for pb.Next() {
				if _, err := bridge.Result(a.Actors.Root.RequestFuture(pid, payload, futureTimeout)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per operation since start
// (both nodes: they share the process): on a shared machine a steadier
// figure than wall time.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}
