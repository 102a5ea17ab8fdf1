//go:build chaos

package chaos

import (
	"slices"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/faultnet"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestDelay: every link to and from b gets 50 ms of latency each way for
// 5 s while a floods b and d calls it. Nothing may fail: calls take the
// delay, no link is declared dead, every send written is delivered in
// order.
func TestDelay(t *testing.T) {
	const delay, length = 50 * time.Millisecond, 5 * time.Second
	sc := newScenario(t, "delay")
	pn := newPartnet(t, partHB, partMisses)
	a, d := pn.a, pn.d
	led := openLedger(a, "b")
	f := startFlood(t, a.sys, 1000, 0, func(i int) (string, string) { return "b", SinkName(i % floodSinks) })
	eventually(t, 30*time.Second, "the flood under way", func() bool { return pn.bCtr.Load(Delivered) >= 20_000 })
	pn.each(func(p *faultnet.Proxy) { p.Delay(faultnet.Both, delay) })
	start := time.Now()
	var lat []time.Duration
	var errs int
	for time.Since(start) < length {
		t0 := time.Now()
		if _, err := d.sys.Call(ctxFor(t, 30*time.Second), "b", "echo", &testpb.Echo{}); err != nil {
			errs++
		}
		lat = append(lat, time.Since(t0))
	}
	pn.each((*faultnet.Proxy).Heal)
	hung := f.halt(30 * time.Second)
	bk := led.close(t, f.attempted())
	delivered := settle(t, 30*time.Second, 300*time.Millisecond, func() int64 { return pn.bCtr.Load(Delivered) })
	slices.Sort(lat)
	downs := a.logs.Count("link down") + d.logs.Count("link down")

	sc.set("delay_ms_each_way", delay)
	sc.set("calls", len(lat))
	sc.set("call_errors", errs)
	sc.set("call_min_ms", lat[0])
	sc.set("call_median_ms", lat[len(lat)/2])
	sc.set("call_max_ms", lat[len(lat)-1])
	sc.set("links_dropped", downs)
	bk.record(sc)
	sc.set("delivered", delivered)
	sc.set("lost", bk.written-delivered-pn.bCtr.Load(DeadLetters))
	sc.set("out_of_order", pn.bCtr.Load(OutOfOrder))
	sc.set("writers_hung", hung)

	require.Zero(t, errs, "a slow network is not a failure")
	require.GreaterOrEqual(t, lat[0], 2*delay, "calls take the delay both ways")
	require.Zero(t, downs, "no link declared dead")
	require.Zero(t, hung)
	bk.check(t)
	require.Zero(t, bk.refused+bk.proxyDropped+bk.unsent)
	require.Equal(t, bk.written, delivered, "every send delivered")
	require.Zero(t, pn.bCtr.Load(OutOfOrder))
}

// TestReset: every connection to and from b is reset (RST both ways)
// five times, a second apart, while a floods b and d's 20 callers call
// it. Every call ends with a documented class, the nodes link up again
// after each reset, what was delivered kept its order, and every send is
// accounted for on a's side (what the resets destroyed in flight is
// reported).
func TestReset(t *testing.T) {
	const resets = 5
	sc := newScenario(t, "reset")
	pn := newPartnet(t, partHB, partMisses)
	a, d := pn.a, pn.d
	led := openLedger(a, "b")
	f := startFlood(t, a.sys, 1000, 0, func(i int) (string, string) { return "b", SinkName(i % floodSinks) })
	var calls callLog
	stop, callers := startCallers(t, d.sys, 20, "b", &calls)
	eventually(t, 30*time.Second, "the flood under way", func() bool { return pn.bCtr.Load(Delivered) >= 20_000 })
	var recoveries []time.Duration
	var killed int
	for range resets {
		for _, p := range pn.px {
			killed += p.Reset()
		}
		at := time.Now()
		eventually(t, 30*time.Second, "d calling b again", func() bool {
			_, err := d.sys.Call(ctxFor(t, 5*time.Second), "b", "echo", &testpb.Echo{})
			return err == nil
		})
		recoveries = append(recoveries, time.Since(at))
		base := pn.bCtr.Load(Delivered)
		eventually(t, 30*time.Second, "the flood delivering again", func() bool { return pn.bCtr.Load(Delivered) > base+20_000 })
	}
	stop()
	callersDone := waitGroupWithin(callers, 30*time.Second)
	hung := f.halt(30 * time.Second)
	bk := led.close(t, f.attempted())
	delivered := settle(t, 30*time.Second, 300*time.Millisecond, func() int64 { return pn.bCtr.Load(Delivered) })
	cls := newClasses()
	for _, c := range calls.calls {
		cls.add(c.err)
	}
	slices.Sort(recoveries)

	sc.set("resets", resets)
	sc.set("connections_reset", killed)
	sc.set("calls", len(calls.calls))
	sc.set("classes", cls.String())
	sc.set("callers_hung", !callersDone)
	sc.set("recovery_median_ms", recoveries[len(recoveries)/2])
	sc.set("recovery_max_ms", recoveries[len(recoveries)-1])
	bk.record(sc)
	sc.set("delivered", delivered)
	sc.set("b_dead_letters", pn.bCtr.Load(DeadLetters))
	sc.set("lost_in_flight_at_resets", bk.written-delivered-pn.bCtr.Load(DeadLetters))
	sc.set("out_of_order", pn.bCtr.Load(OutOfOrder))
	sc.set("writers_hung", hung)

	require.True(t, callersDone, "callers blocked in calls that never ended")
	require.Empty(t, cls.wrong, "calls failed with the wrong class")
	require.Zero(t, hung)
	bk.check(t)
	require.GreaterOrEqual(t, bk.written-delivered-pn.bCtr.Load(DeadLetters), int64(0))
	require.Zero(t, pn.bCtr.Load(OutOfOrder), "per-sender order broken")
}
