//go:build chaos

package chaos

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// TestStopCont: b is frozen with SIGSTOP (its links stay open: half-open
// as far as anyone can tell) while d has 200 calls running on it and a
// floods it with sends. Liveness (heartbeats 200 ms x 3) must fail the
// calls as node down, new calls during the freeze must end (not hang),
// and after SIGCONT b serves again as the same incarnation. Every send
// is accounted for as in the kill scenario; c keeps serving throughout.
func TestStopCont(t *testing.T) {
	const (
		calls  = 200
		hb     = 200 * time.Millisecond
		misses = 3
		freeze = 3 * time.Second
	)
	sc := newScenario(t, "sigstop")
	quick := func(rc *remote.Config) { rc.HandshakeTimeout, rc.DialTimeout = time.Second, time.Second }
	cl := newCluster(t, clusterOpts{pooled: true, bExtra: floodSinkExtra(), heartbeat: hb, misses: misses, aConfig: quick})
	a, b := cl.a, cl.b
	dc := remote.Config{Seeds: []string{b.Seed()}, Liveness: remote.Liveness{HeartbeatInterval: hb, HeartbeatMisses: misses}}
	quick(&dc)
	d := startLocal(t, "d", dc, nil) // the caller: a's pool toward b carries sends only
	require.NoError(t, d.n.Connect(ctxFor(t, 10*time.Second), "b", ""))
	_, bPort, _ := net.SplitHostPort(b.Addr)
	port, _ := strconv.Atoi(bPort)
	probe := startProber(t, a.sys, "c", 10*time.Millisecond)
	rss0 := selfRSS()
	led := openLedger(a, "b")

	f := startFlood(t, a.sys, 1000, 0, func(i int) (string, string) { return "b", SinkName(i % floodSinks) })
	results := startCalls(d.sys, calls, "b", "sleep", func(int) proto.Message { return &testpb.Sleep{Millis: 5000} })
	eventually(t, 30*time.Second, "the calls running on b", func() bool { return running(d.sys, "b") == calls })
	eventually(t, 30*time.Second, "the flood under way", func() bool { return cl.bCtr.Load(Delivered) >= 20_000 })

	require.NoError(t, b.Signal(syscall.SIGSTOP))
	stopped := time.Now()
	got, hung := collect(results, calls, 30*time.Second)
	cls := newClasses()
	var worst time.Duration
	for _, c := range got {
		cls.add(c.err)
		worst = max(worst, c.end.Sub(stopped))
	}
	// A call made while b is frozen ends too: its link is dead, and a new
	// one cannot complete a handshake with a frozen process.
	duringStart := time.Now()
	_, duringErr := d.sys.Call(ctxFor(t, 30*time.Second), "b", "echo", &testpb.Echo{})
	during := time.Since(duringStart)
	eventually(t, 2*freeze, "the freeze", func() bool { return time.Since(stopped) >= freeze })
	kernel, err := KernelQueues(port)
	require.NoError(t, err)
	require.NoError(t, b.Signal(syscall.SIGCONT))
	thawed := time.Now()
	eventually(t, 30*time.Second, "b serving again", func() bool {
		_, err := d.sys.Call(ctxFor(t, 5*time.Second), "b", "echo", &testpb.Echo{})
		return err == nil
	})
	recovered := time.Since(thawed)
	cl.waitPool(t, "b")
	peer, _ := a.n.Peer("b")
	eventually(t, 30*time.Second, "the flood delivering again", func() bool { return cl.bCtr.Load(Delivered) > 0 })
	hungWriters := f.halt(30 * time.Second)
	probe.halt()
	bk := led.close(t, f.attempted())
	delivered := settle(t, 30*time.Second, 300*time.Millisecond, func() int64 { return cl.bCtr.Load(Delivered) })
	bDead := cl.bCtr.Load(DeadLetters)
	lost := bk.written - delivered - bDead
	bound := inFlightBound(kernel, led.minWireSize(bk), 3)

	sc.set("calls_in_flight", calls)
	sc.set("hung", hung)
	sc.set("failed_within_ms", worst)
	sc.set("detect_bound_ms", hb*misses)
	sc.set("classes", cls.String())
	sc.set("call_during_freeze_ms", during)
	sc.set("call_during_freeze", classOf(duringErr))
	sc.set("recovered_after_cont_ms", recovered)
	sc.set("same_incarnation", peer.Incarnation == b.Incarnation)
	bk.record(sc)
	sc.set("delivered", delivered)
	sc.set("b_dead_letters", bDead)
	sc.set("lost", lost)
	sc.set("kernel_queued_kib", kernel>>10)
	sc.set("bound", bound)
	sc.set("out_of_order", cl.bCtr.Load(OutOfOrder))
	sc.set("writers_hung", hungWriters)
	sc.set("late_replies_d", d.n.Stats().LateReplies)
	sc.set("bystander_failed", probe.failed.Load())
	sc.set("a_rss_start_mib", MiB(rss0))
	sc.set("a_rss_end_mib", MiB(selfRSS()))

	require.Zero(t, hung, "calls that never ended")
	require.Empty(t, cls.wrong)
	require.Equal(t, calls, cls.get("node_down"), "every running call: node down (%s)", cls)
	require.Less(t, worst, hb*misses+time.Second, "liveness fails the calls within the heartbeat bound")
	require.Error(t, duringErr, "a call to a frozen node cannot succeed")
	require.Less(t, during, 5*time.Second, "a call to a frozen node ends")
	require.Equal(t, b.Incarnation, peer.Incarnation, "a thawed node is the same incarnation")
	require.Zero(t, hungWriters)
	bk.check(t)
	require.Zero(t, cl.bCtr.Load(OutOfOrder), "per-sender order broken")
	require.GreaterOrEqual(t, lost, int64(0))
	require.LessOrEqual(t, lost, bound, "sends lost beyond what b's kernel and buffers held")
	require.Zero(t, probe.failed.Load(), "the bystander kept serving: %v", probe.err())
}
