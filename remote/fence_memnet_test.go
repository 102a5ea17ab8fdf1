package remote

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/mailroom-go/mailroom/remote/internal/peers"
	"github.com/stretchr/testify/require"
)

// Deterministic fence tests. The connections buffer like a kernel's and
// can be held (memnet.NewBuffered): frames written on a held connection
// wait undelivered, as in a frozen peer's kernel. No timer can fire
// (HeartbeatInterval is an hour), and every other wait is held by the
// test, so the fence alone decides the order: each test fails, with the
// order it states, when the fence it guards is taken out (the mutation
// checks named in each test).

// fenceNet starts a and b on a buffered in-memory network, with an order
// sink on b, and links a to b.
func fenceNet(t *testing.T) (net *memnet.Network, asys *actor.System, a, b *Node, sink *orderSink) {
	t.Helper()
	net = memnet.NewBuffered(1 << 20)
	cfg := Config{Network: net, Liveness: Liveness{HeartbeatInterval: time.Hour}, PoolSize: 1}
	bsys, b, _ := startNode(t, "b", cfg)
	sink = startOrderSink(t, bsys)
	cfg.Seeds = []string{"b=" + b.Addr()}
	asys, a, _ = startNode(t, "a", cfg)
	require.NoError(t, a.Connect(context.Background(), "b", ""))
	noDeadLetters(t, asys)
	noDeadLetters(t, bsys)
	return net, asys, a, b, sink
}

// orderSink records the Echo.N of what its actor ("order") receives.
type orderSink struct {
	mu  sync.Mutex // protects got
	got []int64
}

func startOrderSink(t *testing.T, sys *actor.System) *orderSink {
	s := &orderSink{}
	_, err := sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if e, ok := c.Message().(*testpb.Echo); ok {
			s.mu.Lock()
			s.got = append(s.got, e.N)
			s.mu.Unlock()
		}
	}), "order")
	require.NoError(t, err)
	return s
}

func (s *orderSink) received() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64{}, s.got...)
}

func (s *orderSink) has(n int64) bool {
	for _, v := range s.received() {
		if v == n {
			return true
		}
	}
	return false
}

// noDeadLetters fails the test at its end if sys had any.
func noDeadLetters(t *testing.T, sys *actor.System) {
	var mu sync.Mutex
	var dead []actor.DeadLetter
	cancel := sys.SubscribeDeadLetters(func(d actor.DeadLetter) {
		mu.Lock()
		dead = append(dead, d)
		mu.Unlock()
	})
	t.Cleanup(func() {
		cancel()
		mu.Lock()
		defer mu.Unlock()
		require.Empty(t, dead, "dead letters on %s", sys.Name())
	})
}

// sendFrames is how many bytes the frames of sends of Echo{N: ns} from
// sender to the order sink take on l.
func sendFrames(t *testing.T, l *link, sender actor.PID, ns ...int64) int {
	size := 0
	for _, n := range ns {
		b, err := l.ends.EncodeFrame(nil, &wire.Element{Kind: wire.KindSend, ToName: "order", Sender: sender, Type: "mailroom.testpb.Echo", Msg: &testpb.Echo{N: n}})
		require.NoError(t, err)
		size += len(b)
	}
	return size
}

func TestAFenceHoldsANewLinkBehindAnAbandonedOne(t *testing.T) {
	net, asys, a, b, sink := fenceNet(t)
	s := asys.NewSender()
	send := func(ns ...int64) {
		for _, n := range ns {
			s.SendNamed("b", "order", &testpb.Echo{N: n})
		}
	}
	send(1, 2)
	waitFor(t, "1 and 2 delivered", func() bool { return len(sink.received()) == 2 })

	// The native link's next frames stay unread in b's "kernel".
	_, l1 := a.dial.live("b")
	require.NotNil(t, l1)
	conn := net.Conns(b.Addr())[0]
	require.Same(t, conn, l1.conn)
	conn.Hold()
	send(3, 4, 5)
	held := sendFrames(t, l1, s.PID(), 3, 4, 5)
	waitFor(t, "3, 4, 5 written to the held connection", func() bool { return conn.Buffered() == held })

	// a abandons the link while b lives (as a write error or silence
	// would): its frames, and then its close, are still held.
	l1.close(errors.New("test: abandoned"))

	// 6 goes on a new link, which starts with a fence naming the old one:
	// b's reader of the new link waits for its reader of the old one.
	send(6)
	waitFor(t, "b waits on the fence (or wrongly delivered 6)", func() bool { return b.Stats().FenceWaits == 1 || sink.has(6) })
	require.Equal(t, []int64{1, 2}, sink.received(), "nothing overtakes what the abandoned link carries")

	conn.Release()
	waitFor(t, "six delivered", func() bool { return len(sink.received()) == 6 })
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, sink.received())
	require.Zero(t, b.Stats().FenceTimeouts)
	require.Zero(t, a.Stats().DroppedUnsent)
}

// handPool is a pool of one link from a to b driven by hand: its owner
// (the proxy's part) flushes when woken.
type handPool struct {
	pl   *poolLink
	pool *pubPool
	stop chan struct{}
	wg   sync.WaitGroup
}

func startHandPool(t *testing.T, asys *actor.System, a *Node, node string) *handPool {
	t.Helper()
	h := dialHandPool(t, a, node)
	h.publish(t, asys, a, node)
	return h
}

// dialHandPool dials the pool's link and starts its owner.
func dialHandPool(t *testing.T, a *Node, node string) *handPool {
	t.Helper()
	ctx := context.Background()
	info, ok := a.Peer(node)
	require.True(t, ok)
	pl, err := a.dial.pool(ctx, node, info.Incarnation, 0)
	require.NoError(t, err)
	h := &handPool{pl: pl, stop: make(chan struct{})}
	wake := make(chan struct{}, 1)
	pl.OnQueued(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for {
			select {
			case <-wake:
			case <-h.stop:
				return
			}
			for {
				more, err := pl.Flush()
				if err != nil || !more {
					break
				}
			}
		}
	}()
	t.Cleanup(func() {
		h.halt()
		pl.Close(errors.New("test over"))
		if h.pool != nil {
			(*host)(a).unpublishPool(h.pool, errors.New("test over"))
		}
	})
	return h
}

// publish publishes the pool of h's link.
func (h *handPool) publish(t *testing.T, asys *actor.System, a *Node, node string) {
	t.Helper()
	pool, err := (*host)(a).publishPool(node, h.pl.Incarnation(), []actor.PID{{Node: "a", Incarnation: asys.Incarnation(), ID: 1}}, poolOptions{Links: []*poolLink{h.pl}})
	require.NoError(t, err)
	h.pool = pool
}

// drain stops the owner, writes what the link's queue holds and
// half-closes it, as a proxy whose pool was torn down does.
func (h *handPool) drain(t *testing.T) {
	t.Helper()
	h.halt()
	for {
		more, err := h.pl.Flush()
		require.NoError(t, err)
		if !more {
			break
		}
	}
	h.pl.Finish()
}

// halt stops the owner goroutine.
func (h *handPool) halt() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	h.wg.Wait()
}

func TestAPoolWritesNothingBeforeTheNativePathIsDelivered(t *testing.T) {
	net, asys, a, b, sink := fenceNet(t)
	s := asys.NewSender()
	_, native := a.dial.live("b")
	conn := net.Conns(b.Addr())[0]
	require.Same(t, conn, native.conn)
	conn.Hold()
	for n := range int64(3) {
		s.SendNamed("b", "order", &testpb.Echo{N: n + 1})
	}
	held := sendFrames(t, native, s.PID(), 1, 2, 3)
	waitFor(t, "1, 2, 3 written to the held native connection", func() bool { return conn.Buffered() == held })

	// The publish pings the held native link: the pool's fence.
	h := startHandPool(t, asys, a, "b")
	s.SendNamed("b", "order", &testpb.Echo{N: 4})
	waitFor(t, "the pool waits on its fence (or wrongly delivered 4)", func() bool { return h.pl.fenceWait.Load() || sink.has(4) })
	require.Empty(t, sink.received(), "the pool wrote before the native path was delivered")

	conn.Release()
	waitFor(t, "four delivered", func() bool { return len(sink.received()) == 4 })
	require.Equal(t, []int64{1, 2, 3, 4}, sink.received())
	require.Equal(t, uint64(1), (*host)(a).poolStatsFor("b").Messages.Load(), "4 went through the pool")
}

func TestAfterUnpublishTheNativePathWaitsForThePoolLinks(t *testing.T) {
	net, asys, a, b, sink := fenceNet(t)
	s := asys.NewSender()
	h := startHandPool(t, asys, a, "b")
	conns := net.Conns(b.Addr())
	require.Len(t, conns, 2, "the native link and the pool link")
	pconn := conns[1]
	pconn.Hold()
	for n := range int64(3) {
		s.SendNamed("b", "order", &testpb.Echo{N: n + 1})
	}
	stats := (*host)(a).poolStatsFor("b")
	waitFor(t, "1, 2, 3 written to the held pool link", func() bool { return stats.Messages.Load() == 3 })

	// Unpublish while b lives (StopConnection does): a fence naming the
	// pool link goes on the native link; the owner writes what is left
	// (nothing) and half-closes the link (held too).
	(*host)(a).unpublishPool(h.pool, errors.New("test: connection stopped"))
	h.drain(t)
	require.Equal(t, peers.LinkFenced, h.pl.l.st.Phase(), "the pool link: named in the fence, half-closed, read by b to its end")
	_, native := a.dial.live("b")
	require.Equal(t, peers.LinkOpen, native.st.Phase(), "the native link")

	s.SendNamed("b", "order", &testpb.Echo{N: 4})
	waitFor(t, "b waits on the fence (or wrongly delivered 4)", func() bool { return b.Stats().FenceWaits == 1 || sink.has(4) })
	require.Empty(t, sink.received(), "the native path overtook the pool's links")

	pconn.Release()
	waitFor(t, "four delivered", func() bool { return len(sink.received()) == 4 })
	require.Equal(t, []int64{1, 2, 3, 4}, sink.received())
	require.Zero(t, b.Stats().FenceTimeouts)
	waitFor(t, "the pool link ended", func() bool { return h.pl.l.st.Phase() == peers.LinkEnded })
}

// (fix) The pool's fence is raised before the route changes and given to
// the pool with it: a proxy woken by the very first push waits for it.
// Before, Publish changed the route first and the proxies read the
// peer's fence of the moment: one woken in between read the previous
// fence (none, the first time) and wrote before the barrier's ping was
// even queued (4 delivered before 1, 2, 3).
func TestAPoolFindsItsFenceTheMomentItIsRouted(t *testing.T) {
	net, asys, a, b, sink := fenceNet(t)
	s := asys.NewSender()
	_, native := a.dial.live("b")
	conn := net.Conns(b.Addr())[0]
	conn.Hold()
	for n := range int64(3) {
		s.SendNamed("b", "order", &testpb.Echo{N: n + 1})
	}
	held := sendFrames(t, native, s.PID(), 1, 2, 3)
	waitFor(t, "1, 2, 3 written to the held native connection", func() bool { return conn.Buffered() == held })

	h := dialHandPool(t, a, "b")
	stats := (*host)(a).poolStatsFor("b")
	// The first push comes the moment the route changes, and its proxy
	// flushes then.
	a.afterPublishSwap = func() {
		s.SendNamed("b", "order", &testpb.Echo{N: 4})
		waitFor(t, "the proxy waits on the fence (or wrongly wrote 4)", func() bool { return h.pl.fenceWait.Load() || stats.Messages.Load() == 1 })
	}
	h.publish(t, asys, a, "b")
	a.afterPublishSwap = nil
	require.Zero(t, stats.Messages.Load(), "the pool wrote before its fence")

	conn.Release()
	waitFor(t, "four delivered", func() bool { return len(sink.received()) == 4 })
	require.Equal(t, []int64{1, 2, 3, 4}, sink.received())
}

// (fix) A publish that replaces a pool while the peer lives fences the
// old pool's links as Unpublish does: what the new pool (or the native
// path) carries waits for what they hold. Before, the old pool was only
// closed, and 4 overtook 1, 2, 3.
func TestAReplacedPoolIsFencedLikeAnUnpublishedOne(t *testing.T) {
	net, asys, a, b, sink := fenceNet(t)
	s := asys.NewSender()
	h1 := startHandPool(t, asys, a, "b")
	conns := net.Conns(b.Addr())
	require.Len(t, conns, 2, "the native link and the first pool's link")
	conns[1].Hold()
	for n := range int64(3) {
		s.SendNamed("b", "order", &testpb.Echo{N: n + 1})
	}
	stats := (*host)(a).poolStatsFor("b")
	waitFor(t, "1, 2, 3 written to the held pool link", func() bool { return stats.Messages.Load() == 3 })

	h2 := dialHandPool(t, a, "b")
	h2.publish(t, asys, a, "b") // replaces the first pool
	h1.drain(t)

	s.SendNamed("b", "order", &testpb.Echo{N: 4})
	waitFor(t, "b waits on a fence (or wrongly delivered 4)", func() bool { return b.Stats().FenceWaits >= 1 || sink.has(4) })
	require.Empty(t, sink.received(), "the new pool overtook the one it replaced")

	conns[1].Release()
	waitFor(t, "four delivered", func() bool { return len(sink.received()) == 4 })
	require.Equal(t, []int64{1, 2, 3, 4}, sink.received())
	require.Equal(t, uint64(4), stats.Messages.Load(), "4 went through the new pool")
	require.Zero(t, b.Stats().FenceTimeouts)
}
