//go:build chaos

package chaos

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// sampler records a's and b's vitals every interval until halted.
type sampler struct {
	mu   sync.Mutex // protects a, b
	a, b []Sample
	stop chan struct{}
	done chan struct{}
}

func startSampler(bCtr *Counters, every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			at := time.Since(start)
			sa := Sample{At: at, RSS: selfRSS(), Goroutines: int64(runtime.NumGoroutine())}
			sb := Sample{At: at, RSS: bCtr.Load(Resident), Goroutines: bCtr.Load(Goroutines), Rate: float64(bCtr.Load(Delivered))}
			s.mu.Lock()
			s.a, s.b = append(s.a, sa), append(s.b, sb)
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) halt() {
	close(s.stop)
	<-s.done
}

// mark returns the number of samples so far.
func (s *sampler) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.a)
}

// peak is the largest RSS between two marks, and the RSS at the first.
func peak(xs []Sample, from, to int) (first, top int64) {
	first = xs[from].RSS
	for _, x := range xs[from:to] {
		top = max(top, x.RSS)
	}
	return first, top
}

// TestSlowConsumer: b's sinks stall for 10 s (longer than liveness
// allows a silent link) while a floods them. Bounded mailboxes must hold
// memory flat and apply their policy: with Block the senders wait and
// nothing is lost or dropped; with FailFast at b the sinks refuse and
// count; with FailFast in a's proxies, a's senders are refused and
// counted. No link may die: b's links are busy, not silent.
func TestSlowConsumer(t *testing.T) {
	for _, v := range []struct{ name, sink, proxy string }{
		{"slow-consumer-block", "block", "block"},
		{"slow-consumer-failfast-sink", "failfast", "block"},
		{"slow-consumer-failfast-proxy", "block", "failfast"},
	} {
		t.Run(v.name, func(t *testing.T) { slowConsumer(t, v.name, v.sink, v.proxy) })
	}
}

func slowConsumer(t *testing.T, name, sinkPolicy, proxyPolicy string) {
	const stall = 10 * time.Second
	sc := newScenario(t, name)
	bExtra := map[string]string{ExtraSinks: "10", ExtraSinkBound: "1000", ExtraSinkPolicy: sinkPolicy}
	aCfg := func(rc *remote.Config) {
		if proxyPolicy == "failfast" {
			rc.SendPolicy = actor.FailFast
		}
	}
	cl := newCluster(t, clusterOpts{pooled: true, bExtra: bExtra, aConfig: aCfg, aExtra: map[string]string{ExtraProxyPolicy: proxyPolicy, ExtraProxyQueue: "4096"}})
	a, b := cl.a, cl.b
	ctl := startLocal(t, "ctl", remote.Config{Seeds: []string{b.Seed()}}, map[string]string{ExtraPool: "off"})
	gate := func(how string) {
		_, err := ctl.sys.Call(ctxFor(t, 10*time.Second), "b", "gate", &testpb.Echo{Text: how})
		require.NoError(t, err)
	}
	led := openLedger(a, "b")
	st0 := a.n.Stats()
	smp := startSampler(cl.bCtr, 250*time.Millisecond)
	// Refused sends do not block, so unpaced writers facing fail-fast
	// proxies spin on both cores; the node's own goroutines then starve
	// its heartbeats (ticks measured up to 1.5 s late) and its peers
	// rightly see it as silent after 3 s (docs/RELIABILITY.md). Paced at
	// 5 ms, 1,000 writers still offer 200,000 sends a second, far more
	// than the stalled sinks take: the proxies fill and refuse.
	var pace time.Duration
	if proxyPolicy == "failfast" {
		pace = 5 * time.Millisecond
	}
	f := startFlood(t, a.sys, 1000, pace, func(i int) (string, string) { return "b", SinkName(i % 10) })
	eventually(t, 30*time.Second, "the flood under way", func() bool { return cl.bCtr.Load(Delivered) >= 20_000 })

	gate("close")
	stalled := time.Now()
	eventually(t, 30*time.Second, "queues filled", func() bool { return time.Since(stalled) >= 2*time.Second })
	full, atFull := smp.mark(), f.attempted()
	eventually(t, 2*stall, "the stall", func() bool { return time.Since(stalled) >= stall })
	end, atEnd := smp.mark(), f.attempted()
	gate("open")
	base := cl.bCtr.Load(Delivered)
	eventually(t, 30*time.Second, "the sinks delivering again", func() bool { return cl.bCtr.Load(Delivered) > base+20_000 })
	hung := f.halt(30 * time.Second)
	bk := led.close(t, f.attempted())
	delivered := settle(t, 60*time.Second, 500*time.Millisecond, func() int64 { return cl.bCtr.Load(Delivered) })
	smp.halt()
	bDead := cl.bCtr.Load(DeadLetters)
	aFirst, aTop := peak(smp.a, full, end)
	bFirst, bTop := peak(smp.b, full, end)
	failed := a.n.Stats().FailedByLiveness - st0.FailedByLiveness
	linkDowns := a.logs.Count("link down")

	sc.set("stall_s", stall.Seconds())
	sc.set("sent_during_stall", atEnd-atFull)
	bk.record(sc)
	sc.set("delivered", delivered)
	sc.set("b_dead_letters", bDead)
	sc.set("lost", bk.written-delivered-bDead)
	sc.set("out_of_order", cl.bCtr.Load(OutOfOrder))
	sc.set("links_dropped", linkDowns)
	sc.set("failed_by_liveness", failed)
	sc.set("a_rss_stall_start_mib", MiB(aFirst))
	sc.set("a_rss_stall_peak_mib", MiB(aTop))
	sc.set("b_rss_stall_start_mib", MiB(bFirst))
	sc.set("b_rss_stall_peak_mib", MiB(bTop))
	sc.set("writers_hung", hung)

	require.Zero(t, hung)
	bk.check(t)
	require.Zero(t, linkDowns, "a link died: a stalled consumer is not a dead peer")
	require.Equal(t, bk.written, delivered+bDead, "nothing lost: every send written was delivered or counted by b")
	require.Zero(t, cl.bCtr.Load(OutOfOrder), "per-sender order broken")
	require.Less(t, aTop-aFirst, int64(64<<20), "a's memory grew during the stall")
	require.Less(t, bTop-bFirst, int64(64<<20), "b's memory grew during the stall")
	switch {
	case sinkPolicy == "failfast":
		require.Positive(t, bDead, "full sinks refuse and count")
		require.Zero(t, bk.refused+bk.proxyDropped)
	case proxyPolicy == "failfast":
		require.Positive(t, bk.refused, "full proxies refuse and count")
		require.Zero(t, bDead)
	default:
		require.Zero(t, bk.refused+bk.proxyDropped+bDead, "Block drops nothing")
		require.Less(t, atEnd-atFull, int64(1000), "Block makes the senders wait")
	}
}
