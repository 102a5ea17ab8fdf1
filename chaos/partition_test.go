//go:build chaos

package chaos

import (
	"strconv"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/faultnet"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

const (
	partHB     = 500 * time.Millisecond
	partMisses = 3
	partFor    = 4 * time.Second
)

// TestPartitionAndHeal: b is cut off from a and d (both directions
// blackholed: nothing passes, nothing closes) while a floods b, d has 100
// calls running on b and b has 100 running on d. Liveness must fail every
// call on both sides as node down; a call made during the partition must
// end; after the heal, the nodes link up again and serve. Sends are
// accounted for; those lost are at most what the kernels and the proxy
// held when the links died. c, linked directly to all, keeps serving.
func TestPartitionAndHeal(t *testing.T) {
	cut(t, "partition", func(p *faultnet.Proxy, toB bool) { p.Blackhole(faultnet.Both) })
}

// TestOneWayLoss: everything toward b is lost (blackholed), everything
// from b passes. b hears nothing and drops its links; a and d learn it
// from b's close, which crosses the working direction. The same checks
// as the partition.
func TestOneWayLoss(t *testing.T) {
	cut(t, "oneway-loss", func(p *faultnet.Proxy, toB bool) {
		if toB {
			p.Blackhole(faultnet.Up) // connections a and d dialed to b
		} else {
			p.Blackhole(faultnet.Down) // connections b dialed to a and d
		}
	})
}

func cut(t *testing.T, name string, fault func(p *faultnet.Proxy, toB bool)) {
	const calls = 100
	sc := newScenario(t, name)
	pn := newPartnet(t, partHB, partMisses)
	a, d, bCtr := pn.a, pn.d, pn.bCtr
	probes := []*prober{startProber(t, a.sys, "c", 10*time.Millisecond), startProber(t, pn.c.sys, "b", 10*time.Millisecond)}
	led := openLedger(a, "b")
	f := startFlood(t, a.sys, 1000, 0, func(i int) (string, string) { return "b", SinkName(i % floodSinks) })
	// The calls sleep 8 s: they outlive the fault's detection, and end
	// before the nodes stop (a callee keeps running a call whose caller
	// lost its link; only the caller's incarnation ending cancels it).
	fromD := startCalls(d.sys, calls, "b", "sleep", func(int) proto.Message { return &testpb.Sleep{Millis: 8000} })
	_, err := a.sys.Call(ctxFor(t, 10*time.Second), "c", "echo", &testpb.Echo{}) // warm c's links
	require.NoError(t, err)
	_, err = pn.c.sys.Call(ctxFor(t, 10*time.Second), "b", "spawn_calls", &testpb.Echo{Text: "d sleep", N: calls, From: "8000"})
	require.NoError(t, err)
	eventually(t, 30*time.Second, "the calls running", func() bool { return running(pn.c.sys, "b") == calls && running(pn.c.sys, "d") == calls })
	eventually(t, 30*time.Second, "the flood under way", func() bool { return bCtr.Load(Delivered) >= 20_000 })

	cutAt := time.Now()
	for n, p := range pn.px {
		fault(p, n == "b")
	}
	cls := newClasses()
	got, hung := collect(fromD, calls, 30*time.Second)
	worst := time.Duration(0)
	for _, c := range got {
		cls.add(c.err)
		worst = max(worst, c.end.Sub(cutAt))
	}
	eventually(t, 30*time.Second, "b's calls to d ended", func() bool { return bCtr.Load(CallsEnded) == calls })
	worst = max(worst, time.UnixMilli(bCtr.Load(CallsLastEnd)).Sub(cutAt))
	duringStart := time.Now()
	_, duringErr := d.sys.Call(ctxFor(t, 30*time.Second), "b", "echo", &testpb.Echo{})
	during := time.Since(duringStart)
	eventually(t, 2*partFor, "the fault's length", func() bool { return time.Since(cutAt) >= partFor })
	held := pn.inFlight(t)
	pn.each((*faultnet.Proxy).Heal)
	healed := time.Now()
	eventually(t, 30*time.Second, "d and b calling each other again", func() bool {
		v, err := d.sys.Call(ctxFor(t, 5*time.Second), "b", "call_node", &testpb.Echo{Text: "d echo", N: 1})
		return err == nil && v.(*testpb.Echo).N == 1
	})
	recovered := time.Since(healed)
	waitPoolOf(t, a, "b")
	base := bCtr.Load(Delivered)
	eventually(t, 30*time.Second, "the flood delivering again", func() bool { return bCtr.Load(Delivered) > base+1000 })
	hungWriters := f.halt(30 * time.Second)
	for _, p := range probes {
		p.halt()
	}
	bk := led.close(t, f.attempted())
	delivered := settle(t, 30*time.Second, 300*time.Millisecond, func() int64 { return bCtr.Load(Delivered) })
	bDead := bCtr.Load(DeadLetters)
	lost := bk.written - delivered - bDead
	bound := inFlightBound(held, led.minWireSize(bk), 3)
	bNodeDown := int(bCtr.Load(CallsNodeDown))

	sc.set("calls_in_flight", 2*calls)
	sc.set("hung", hung+calls-int(bCtr.Load(CallsEnded)))
	sc.set("failed_within_ms", worst)
	sc.set("detect_bound_ms", partHB*partMisses)
	sc.set("classes", cls.String()+",b_side_node_down:"+strconv.Itoa(bNodeDown))
	sc.set("call_during_fault_ms", during)
	sc.set("call_during_fault", classOf(duringErr))
	sc.set("recovered_after_heal_ms", recovered)
	bk.record(sc)
	sc.set("delivered", delivered)
	sc.set("b_dead_letters", bDead)
	sc.set("lost", lost)
	sc.set("held_at_heal_kib", held>>10)
	sc.set("bound", bound)
	sc.set("out_of_order", bCtr.Load(OutOfOrder))
	sc.set("writers_hung", hungWriters)
	sc.set("bystander_failed", probes[0].failed.Load()+probes[1].failed.Load())

	require.Zero(t, hung, "calls that never ended")
	require.Empty(t, cls.wrong)
	require.Equal(t, calls, cls.get("node_down"), "every call from d: node down (%s)", cls)
	require.Equal(t, calls, bNodeDown, "every call from b: node down")
	require.Less(t, worst, partHB*partMisses+time.Second, "liveness fails the calls within the heartbeat bound")
	require.Error(t, duringErr)
	require.Less(t, during, 5*time.Second, "a call across the fault ends")
	require.Zero(t, hungWriters)
	bk.check(t)
	require.Zero(t, bCtr.Load(OutOfOrder), "per-sender order broken")
	require.GreaterOrEqual(t, lost, int64(0))
	require.LessOrEqual(t, lost, bound, "sends lost beyond what was in flight when the links died")
	for _, p := range probes {
		require.Zero(t, p.failed.Load(), "the bystander kept serving: %v", p.err())
	}
}
