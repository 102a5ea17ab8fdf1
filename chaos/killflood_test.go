//go:build chaos

package chaos

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

const (
	// hbMeasuring is the heartbeat of scenarios that freeze a node for a
	// moment to measure what the kernel holds: long enough (x3 misses)
	// that the freeze goes unnoticed.
	hbMeasuring  = 5 * time.Second
	floodWriters = 50_000
	floodSinks   = 100
	sinkBound    = 256
	batchSize    = 1000 // proxypool's default BatchSize
)

// TestKillDuringSendFlood: 50,000 writers flood b's ordered sinks when b
// is killed. Every send must end in exactly one place:
//
//   - refused at once and counted as a dead letter on a;
//   - handed to a proxy, then written or dropped and counted (pooled);
//   - put in the native link's buffer, then written or dropped and
//     counted (native);
//   - once written: delivered (counted by b's sinks in a file that
//     survives the kill) or lost with b, at most what b's kernel and b's
//     own bounded buffers held when it died.
//
// To know what the kernel held at the kill, b is frozen (SIGSTOP) until
// the queues toward it stop moving, they are read from /proc/net/tcp,
// and b is killed. Delivered messages kept their per-sender order, no
// writer hung, and c kept serving.
func TestKillDuringSendFlood(t *testing.T) {
	for _, pooled := range []bool{true, false} {
		t.Run(pathName(pooled), func(t *testing.T) { killFlood(t, pooled) })
	}
}

// floodSinkExtra gives a node the flood's ordered sinks, bounded.
func floodSinkExtra() map[string]string {
	return map[string]string{ExtraSinks: strconv.Itoa(floodSinks), ExtraSinkBound: strconv.Itoa(sinkBound)}
}

func killFlood(t *testing.T, pooled bool) {
	sc := newScenario(t, "kill-flood-"+pathName(pooled))
	cl := newCluster(t, clusterOpts{pooled: pooled, bExtra: floodSinkExtra(),
		heartbeat: hbMeasuring}) // the freeze below is a measuring device: no one may notice it
	a := cl.a
	_, bPort, err := net.SplitHostPort(cl.b.Addr)
	require.NoError(t, err)
	port, _ := strconv.Atoi(bPort)
	probe := startProber(t, a.sys, "c", 10*time.Millisecond)
	rss0 := selfRSS()
	led := openLedger(a, "b")

	f := startFlood(t, a.sys, floodWriters, 0, func(i int) (string, string) { return "b", SinkName(i % floodSinks) })
	eventually(t, 60*time.Second, "the flood under way", func() bool { return cl.bCtr.Load(Delivered) >= 200_000 })
	require.NoError(t, cl.b.Signal(syscall.SIGSTOP))
	frozen := time.Now()
	// The kernel's queues toward b and what a has written settle
	// together: a sender descheduled for a moment (2 cores, 50,000
	// writers) must not pass for a drained one.
	var kernel, writtenAtFreeze int64
	settle(t, 10*time.Second, 500*time.Millisecond, func() int64 {
		q, err := KernelQueues(port)
		require.NoError(t, err)
		kernel, writtenAtFreeze = q, led.writtenNow()
		return q*31 + writtenAtFreeze
	})
	freeze := time.Since(frozen)
	bRecv, bQueued := cl.bCtr.Load(Received), cl.bCtr.Load(Queued)
	bRSS := cl.bCtr.Load(Resident)
	atKill := f.attempted()
	cl.b.Kill()
	killed := time.Now()
	// Writers keep going against the dead node: those sends must fail
	// fast and be counted.
	eventually(t, 30*time.Second, "sends after the kill", func() bool { return f.attempted() > atKill+10_000 })
	afterKill := time.Since(killed)
	haltAt := time.Now()
	hung := f.halt(30 * time.Second)
	halted := time.Since(haltAt)
	probe.halt()
	bk := led.close(t, f.attempted())
	delivered := cl.bCtr.Load(Delivered)
	bDead := cl.bCtr.Load(DeadLetters)
	links := int64(1)
	if pooled {
		links += 2 // b's receiver pool: one link per worker (GOMAXPROCS)
	}
	bound := inFlightBound(kernel, led.minWireSize(bk), links)
	lost := bk.written - delivered - bDead

	sc.set("writers", floodWriters)
	bk.record(sc)
	sc.set("delivered", delivered)
	sc.set("b_dead_letters", bDead)
	sc.set("lost_with_b", lost)
	sc.set("written_at_freeze", writtenAtFreeze)
	sc.set("b_received_at_freeze", bRecv)
	sc.set("b_queued_at_freeze", bQueued)
	sc.set("kernel_queued_kib", kernel>>10)
	sc.set("freeze_ms", freeze)
	sc.set("bound", bound)
	sc.set("out_of_order", cl.bCtr.Load(OutOfOrder))
	sc.set("writers_hung", hung)
	sc.set("sends_10k_after_kill_ms", afterKill)
	sc.set("writers_halt_ms", halted)
	sc.set("bystander_failed", probe.failed.Load())
	sc.set("a_rss_start_mib", MiB(rss0))
	sc.set("a_rss_end_mib", MiB(selfRSS()))
	sc.set("b_rss_at_kill_mib", MiB(bRSS))

	require.Zero(t, hung, "writers blocked forever")
	require.Less(t, freeze, 3*hbMeasuring, "the measuring freeze went unnoticed")
	bk.check(t)
	require.Zero(t, cl.bCtr.Load(OutOfOrder), "per-sender order broken")
	require.GreaterOrEqual(t, lost, int64(0), "more delivered than written")
	require.LessOrEqual(t, lost, bound, "sends lost beyond what b's kernel and buffers held")
	require.Zero(t, probe.failed.Load(), "the bystander kept serving: %v", probe.err())
	_, err = a.sys.Call(ctxFor(t, 10*time.Second), "c", "echo", &testpb.Echo{})
	require.NoError(t, err)
}
