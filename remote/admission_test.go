package remote

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// holdFn registers fn on sys: each run counts itself and blocks until
// release closes or its ctx ends (then it counts a cancellation).
func holdFn(t *testing.T, sys *actor.System, fn string, release <-chan struct{}) (started, cancelled *atomic.Int64) {
	started, cancelled = new(atomic.Int64), new(atomic.Int64)
	require.NoError(t, sys.Register(fn, func(ctx context.Context, _ proto.Message) (proto.Message, error) {
		started.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			cancelled.Add(1)
		}
		return &testpb.Echo{Text: "done"}, nil
	}))
	return started, cancelled
}

// TestAdmissionBoundsTheCallsOfAPeer: a peer with the cookie floods
// 1,000,000 calls of a function that blocks. The node runs at most
// MaxInflightPerPeer (default 4096) of them and its link's reader stops
// reading at that bound, so TCP pushes back on the peer (its writes
// stall): goroutines and memory stay bounded (the issue measured 340,816
// goroutines and 2.0 GB on a callee), and a legitimate peer's calls go on
// being served.
func TestAdmissionBoundsTheCallsOfAPeer(t *testing.T) {
	sys, victim, _ := startNode(t, "victim", Config{})
	bound := victim.Config().Limits.MaxInflightPerPeer
	require.Equal(t, 4096, bound, "the documented default")
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	started, _ := holdFn(t, sys, "hold", release)
	good, gn, _ := startNode(t, "good", Config{})
	require.NoError(t, gn.Connect(context.Background(), "victim", victim.Addr()))
	healthy(t, good, "victim")
	g0, h0 := runtime.NumGoroutine(), heapNow()
	lg := startLegit(t, good, "victim")

	const calls = 1_000_000
	e := rawEndsAs(victim, "flooder", 7)
	typ, payload, err := marshal(&testpb.Echo{Text: "x"})
	require.NoError(t, err)
	stream := frames(e, calls, func(i int) *wire.Element {
		return &wire.Element{Kind: wire.KindCall, ID: 1<<21 + uint64(i), Fn: "hold", Type: typ, Payload: payload}
	})
	frameSize := int64(len(stream) / calls) // ids of one size: every frame has the same length
	conn := rawLink(t, victim, "flooder", 7, 0)
	f := startFlood(conn, stream, time.Second)
	waitFor(t, "the bound reached", func() bool { return started.Load() >= int64(bound) })
	f.wait(t)
	require.True(t, f.pushback.Load(), "the node stopped reading: the flooder's writes stalled")
	g1, h1 := runtime.NumGoroutine(), heapNow()
	st := victim.Stats()
	calls0, p99, worst := lg.check(t)
	t.Logf("flooder wrote %d of %d calls before TCP pushed back; running %d (bound %d); goroutines %d -> %d; heap+stacks %.1f -> %.1f MiB; legit peer: %d calls, p99 %v, worst %v",
		f.written.Load()/frameSize, calls,
		started.Load(), bound, g0, g1, float64(h0)/(1<<20), float64(h1)/(1<<20), calls0, p99, worst)

	require.Equal(t, int64(bound), started.Load(), "exactly the bound runs")
	require.Equal(t, int64(bound), (*transport)(victim).current("flooder").adm.inflight())
	require.Less(t, st.Received, uint64(calls/2), "the reader stopped reading")
	require.Positive(t, st.AdmissionWaits)
	require.Less(t, g1-g0, bound+128, "goroutines beyond the bound")
	require.Less(t, h1-h0, int64(128<<20), "memory beyond the bound")
	require.Less(t, worst, 2*time.Second, "the legitimate peer was starved")

	// The flooder goes; its running calls finish; nothing is left.
	conn.Close()
	once.Do(func() { close(release) })
	goroutinesSettle(t, g0+8)
	waitFor(t, "nothing in flight", func() bool { return (*transport)(victim).current("flooder").adm.inflight() == 0 })
}

// TestAPeerThatNeverReadsRepliesIsNotKeptForEver: a peer floods calls of
// a quick function and never reads a reply. The replies fill the link
// and the kernels; the calls at the admission bound then only wait to
// hand their replies on, and the reader waiting for admission is waiting
// on the peer, not on this node: liveness closes the link after the
// heartbeat window and everything it held is released.
//
// On the victim's logical clock, stepped an interval at a time, and only
// once every link the good peer has with it was heard since the last
// step (its calls, or its pongs to the step's pings): so the good peer is
// never silent however slow the machine, and the deaf link closes after
// exactly the window of steps. The good peer's own clock stands still: it
// closes nothing.
func TestAPeerThatNeverReadsRepliesIsNotKeptForEver(t *testing.T) {
	const bound, iv, misses = 256, 100 * time.Millisecond, 5
	hb := Config{Liveness: Liveness{HeartbeatInterval: iv, HeartbeatMisses: misses}}
	clk := newLogicalClock()
	_, victim, logs := startNodeAt(t, "victim", Config{Liveness: hb.Liveness, Limits: Limits{MaxInflightPerPeer: bound}, LinkBufferBytes: 64 << 10}, clk)
	good, gn, _ := startNodeAt(t, "good", hb, newLogicalClock())
	require.NoError(t, gn.Connect(context.Background(), "victim", victim.Addr()))
	healthy(t, good, "victim")
	g0 := runtime.NumGoroutine()
	lg := startLegit(t, good, "victim")

	e := rawEndsAs(victim, "deaf", 8)
	typ, payload, err := marshal(&testpb.Echo{Text: strings.Repeat("r", 200)})
	require.NoError(t, err)
	stream := frames(e, 500_000, func(i int) *wire.Element {
		return &wire.Element{Kind: wire.KindCall, ID: 1<<21 + uint64(i), Fn: "echo", Type: typ, Payload: payload}
	})
	conn := rawLink(t, victim, "deaf", 8, 0)
	f := startFlood(conn, stream, 5*time.Second)
	var peak, steps int
	step := func() {
		peak = max(peak, runtime.NumGoroutine())
		stepHeard(t, clk, victim, "good", iv)
		steps++
	}
	waitFor(t, "the deaf peer's admitted calls only hand their replies on, its reader waiting for admission", func() bool {
		peak = max(peak, runtime.NumGoroutine())
		return stalledOnAdmission(victim, "deaf")
	})
	// The kernels' buffers may still take a reply now and then, letting a
	// call in: a read. From its last read, the link is silent a step
	// later, and closed once silent for more than the window: the window's
	// steps and one.
	deaf := onlyLink(t, victim, "deaf")
	var quiet, lastReads uint64
	for !strings.Contains(logs.String(), "the peer reads none of its replies") {
		if r := deaf.reads.Load() + deaf.dataIn.Load(); r != lastReads {
			lastReads, quiet = r, 0
		}
		require.LessOrEqual(t, quiet, uint64(misses+2), "the deaf link still open %d steps after its last read", quiet)
		require.Less(t, steps, 1000, "the deaf link still reads after %d steps", steps)
		step()
		quiet++
	}
	require.Greater(t, steps, misses, "closed before the window passed")
	require.Zero(t, victim.Stats().LinksSilent, "the good peer's links were declared silent")
	f.wait(t)
	calls, p99, worst := lg.check(t)
	t.Logf("goroutines %d, peak %d (bound %d); closed at step %d; legit peer: %d calls, p99 %v, worst %v", g0, peak, bound, steps, calls, p99, worst)
	// Calls here finish at once: a handler that gave its slot back may not
	// have exited yet when the next one starts (the scheduler is slow to
	// retire goroutines under -race on two loaded cores), so the peak can
	// exceed the bound by the ones on their way out: bounded all the same,
	// where the unbounded node made hundreds of thousands.
	require.Less(t, peak-g0, 2*bound+128, "goroutines beyond the bound")
	waitFor(t, "the closed link released what it held", func() bool { return (*transport)(victim).current("deaf").adm.inflight() == 0 })
	// The calls' workers park, and end once parked through a whole sweep
	// of the liveness step (callworkers.go): two sweeps of steps.
	for range 2 * int(workerSweep/iv) {
		step()
	}
	require.Zero(t, victim.Stats().LinksSilent, "the good peer's links were declared silent")
	goroutinesSettle(t, g0+8)
}

// TestCastsAreBoundedAndCancelledWithTheirIncarnation: 200,000 casts to
// a function that waits on its context (the issue measured 200,020
// goroutines, still running after the link closed). At most the bound
// run and the reader stops; when the peer's incarnation is gone (here
// discovery reports it down) every cast still running has its context
// cancelled, and the node is back where it was.
func TestCastsAreBoundedAndCancelledWithTheirIncarnation(t *testing.T) {
	const bound = 500
	sys, victim, _ := startNode(t, "victim", Config{Limits: Limits{MaxInflightPerPeer: bound}})
	started, cancelled := holdFn(t, sys, "slow", make(chan struct{}))
	good, gn, _ := startNode(t, "good", Config{})
	require.NoError(t, gn.Connect(context.Background(), "victim", victim.Addr()))
	g0 := runtime.NumGoroutine()

	e := rawEndsAs(victim, "caster", 9)
	typ, payload, err := marshal(&testpb.Echo{Text: "c"})
	require.NoError(t, err)
	stream := frames(e, 200_000, func(int) *wire.Element {
		return &wire.Element{Kind: wire.KindCast, Fn: "slow", Type: typ, Payload: payload}
	})
	conn := rawLink(t, victim, "caster", 9, 0)
	f := startFlood(conn, stream, time.Second)
	waitFor(t, "the bound reached", func() bool { return started.Load() >= bound })
	f.wait(t)
	require.True(t, f.pushback.Load(), "the node stopped reading: the caster's writes stalled")
	g1 := runtime.NumGoroutine()
	healthy(t, good, "victim")
	require.Equal(t, int64(bound), started.Load(), "exactly the bound runs")
	require.Less(t, g1-g0, bound+128)

	// Discovery reports the caster's incarnation down: it is gone, and so
	// is every cast it had running.
	victim.onMember(discovery.Event{Type: discovery.MemberDown, Member: discovery.Member{Node: "caster", Incarnation: 9}})
	waitFor(t, "every running cast cancelled", func() bool { return cancelled.Load() == bound })
	require.Equal(t, int64(bound), started.Load(), "no cast of the gone incarnation started")
	goroutinesSettle(t, g0+8)
	t.Logf("casts running %d (bound %d), goroutines %d -> %d -> back; cancelled %d", started.Load(), bound, g0, g1, cancelled.Load())
}

// TestAdmissionIsPerIncarnationOverAllItsLinks: the bound holds for a
// peer incarnation over all its links, its native link and its pool
// links to the receiver pool's workers alike: three links flooding at
// once still run exactly the bound, and every one of their readers stops.
func TestAdmissionIsPerIncarnationOverAllItsLinks(t *testing.T) {
	const bound = 300
	sys, victim, _ := startNode(t, "victim", Config{Limits: Limits{MaxInflightPerPeer: bound}, PoolSize: 2})
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	started, _ := holdFn(t, sys, "hold", release)
	e := rawEndsAs(victim, "spread", 18)
	typ, payload, err := marshal(&testpb.Echo{Text: "x"})
	require.NoError(t, err)
	var floods []*flood
	for i, h := range []wire.Hello{
		{Node: "spread", Inc: 18, LinkID: 1},
		{Node: "spread", Inc: 18, LinkID: 2, Role: wire.RolePool, Worker: 0},
		{Node: "spread", Inc: 18, LinkID: 3, Role: wire.RolePool, Worker: 1},
	} {
		stream := frames(e, 200_000, func(j int) *wire.Element {
			return &wire.Element{Kind: wire.KindCall, ID: uint64(i)<<24 + 1<<21 + uint64(j), Fn: "hold", Type: typ, Payload: payload}
		})
		floods = append(floods, startFlood(rawLinkAs(t, victim, h), stream, time.Second))
	}
	for _, f := range floods {
		f.wait(t)
		require.True(t, f.pushback.Load(), "every link's reader stopped")
	}
	require.Equal(t, int64(bound), started.Load(), "the bound is the incarnation's, not each link's")
	require.Equal(t, int64(bound), (*transport)(victim).current("spread").adm.inflight())
	once.Do(func() { close(release) })
}

// stalledOnAdmission reports whether n's calls from node's current
// incarnation are all admitted and done, only waiting to hand their
// replies on, while a link's reader waits for admission.
func stalledOnAdmission(n *Node, node string) bool {
	p := (*transport)(n).current(node)
	if p == nil || p.adm.inflight() == 0 || p.adm.running() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		if l.admitWait.Load() {
			return true
		}
	}
	return false
}
