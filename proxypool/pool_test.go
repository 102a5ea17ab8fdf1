package proxypool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/poolpath"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

func sinkGet(t *testing.T, a *tnode) int64 {
	v, err := a.sys.Call(ctxT(t), "b", "sink_get", &testpb.Echo{})
	require.NoError(t, err)
	return v.(*testpb.Echo).N
}

// allFourOps sends, casts, calls and requests once each, and checks they
// all arrived.
func allFourOps(t *testing.T, a *tnode) {
	t.Helper()
	h := a.sys.NewSender()
	before := sinkGet(t, a)
	h.SendNamed("b", "sink", &testpb.Echo{Text: "send"})
	h.Cast("b", "count", &testpb.Echo{N: 1})
	v, err := h.Call(ctxT(t), "b", "echo", &testpb.Echo{Text: "call"})
	require.NoError(t, err)
	require.Equal(t, "echo call", v.(*testpb.Echo).Text)
	r, err := h.RequestNamed(ctxT(t), "b", "echo", &testpb.Echo{Text: "req"})
	require.NoError(t, err)
	require.Equal(t, "actor req", r.(*testpb.Echo).Text)
	eventually(t, "send delivered", func() bool { return sinkGet(t, a) == before+1 })
}

func TestOpsTravelAsBatchElementsWhenPooled(t *testing.T) {
	eachNetwork(t, func(t *testing.T, net remote.Network) {
		a, _ := pair(t, net, 2, Config{})
		info := waitStatus(t, a.pool, "b", Connected)
		require.Equal(t, 2, info.Proxies)
		before, rs0 := a.pool.Stats("b").Messages, a.n.Stats()
		allFourOps(t, a)
		st, rs1 := a.pool.Stats("b"), a.n.Stats()
		// send, cast, call, request, plus sink_get's two calls: all pooled.
		require.GreaterOrEqual(t, st.Messages-before, uint64(4))
		require.Equal(t, rs0.SendsNative, rs1.SendsNative, "nothing took the native path")
		require.Equal(t, rs0.CallsNative, rs1.CallsNative, "nothing took the native path")
		require.Equal(t, uint64(2), rs1.SendsPooled-rs0.SendsPooled, "the send and the cast")
		require.GreaterOrEqual(t, rs1.CallsPooled-rs0.CallsPooled, uint64(4), "the call, the request and sink_get's calls")
		require.Zero(t, st.GuardViolations)
	})
}

func TestOpsTravelNativelyWithoutAPool(t *testing.T) {
	eachNetwork(t, func(t *testing.T, net remote.Network) {
		t.Run("peer pool disabled", func(t *testing.T) {
			a, _ := pair(t, net, remote.PoolDisabled, Config{})
			info := waitStatus(t, a.pool, "b", Down)
			require.Zero(t, info.Proxies)
			before := a.n.Stats().SendsNative
			allFourOps(t, a)
			require.Zero(t, a.pool.Stats("b").Messages)
			require.Greater(t, a.n.Stats().SendsNative, before)
		})
		t.Run("no master", func(t *testing.T) {
			a, _ := pair(t, net, 2, Config{ManualConnect: true})
			require.Equal(t, NotConnected, a.pool.ConnectionInfo("b").Status)
			allFourOps(t, a)
			require.Zero(t, a.pool.Stats("b").Messages)
		})
		t.Run("after StopConnection", func(t *testing.T) {
			a, _ := pair(t, net, 2, Config{ManualConnect: true})
			require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
			waitStatus(t, a.pool, "b", Connected)
			require.NoError(t, a.pool.StopConnection(ctxT(t), "b"))
			require.Equal(t, NotConnected, a.pool.ConnectionInfo("b").Status)
			before := a.pool.Stats("b").Messages
			allFourOps(t, a)
			require.Equal(t, before, a.pool.Stats("b").Messages)
		})
	})
}

func TestStartAndStopConnectionAreIdempotent(t *testing.T) {
	eachNetwork(t, func(t *testing.T, net remote.Network) {
		a, _ := pair(t, net, 2, Config{ManualConnect: true})
		require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
		first := waitStatus(t, a.pool, "b", Connected)
		require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
		again := a.pool.ConnectionInfo("b")
		require.Equal(t, first.Master, again.Master, "the same master")
		require.Equal(t, 1, again.Builds, "no second pool")
		require.NoError(t, a.pool.StopConnection(ctxT(t), "b"))
		require.NoError(t, a.pool.StopConnection(ctxT(t), "b"))
		info := a.pool.ConnectionInfo("b")
		require.Equal(t, NotConnected, info.Status)
		require.Equal(t, "b", info.Node)
		require.Nil(t, a.pool.host.Route("b"))
	})
}

// holder holds every pool link's writes: each write waits for a token,
// until open lets everything through, or until its link closes (as a
// write blocked in the kernel returns when its connection closes).
type holder struct {
	entered atomic.Int64 // writes that reached the hold
	tokens  chan struct{}
	opened  chan struct{}
	once    sync.Once
}

func newHolder() *holder {
	return &holder{tokens: make(chan struct{}, 1024), opened: make(chan struct{})}
}

func (h *holder) hook(l poolpath.Link) {
	closed := l.Closed()
	l.SetHold(func() {
		h.entered.Add(1)
		select {
		case <-h.tokens:
		case <-h.opened:
		case <-closed:
		}
	})
}

// allow lets n more writes through.
func (h *holder) allow(n int) {
	for range n {
		h.tokens <- struct{}{}
	}
}

// open lets every write through from now on.
func (h *holder) open() { h.once.Do(func() { close(h.opened) }) }

// orderSink records the messages it gets, in order.
type orderSink struct {
	mu  sync.Mutex
	got []int64
}

func (s *orderSink) Receive(c *actor.Context) {
	if e, ok := c.Message().(*testpb.Echo); ok {
		s.mu.Lock()
		s.got = append(s.got, e.N)
		s.mu.Unlock()
	}
}

func (s *orderSink) snapshot() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.got...)
}

func TestBatchCapWithALinkHeldBack(t *testing.T) {
	eachNetwork(t, func(t *testing.T, net remote.Network) {
		b := startNode(t, "b", nodeOpts{net: net, poolSize: 1})
		sink := &orderSink{}
		_, err := b.sys.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return sink }), "order")
		require.NoError(t, err)
		a := startNode(t, "a", nodeOpts{net: net, poolSize: 1, cfg: Config{BatchSize: 2, ManualConnect: true}, seeds: []string{"b=" + b.n.Addr()}})
		h := newHolder()
		t.Cleanup(h.open)
		a.pool.onLink = h.hook
		require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
		waitStatus(t, a.pool, "b", Connected)
		base := a.pool.Stats("b")

		caller := a.sys.NewSender()
		caller.SendNamed("b", "order", &testpb.Echo{N: 0}) // taken alone; the proxy blocks in its write
		eventually(t, "the proxy is held", func() bool { return h.entered.Load() == 1 })
		for i := int64(1); i <= 5; i++ {
			caller.SendNamed("b", "order", &testpb.Echo{N: i})
		}
		eventually(t, "five queued", func() bool { return a.pool.Stats("b").QueueDepth == 5 })
		h.allow(4)
		eventually(t, "all six delivered", func() bool { return len(sink.snapshot()) == 6 })
		require.Equal(t, int64(4), h.entered.Load(), "four writes")
		require.Equal(t, []int64{0, 1, 2, 3, 4, 5}, sink.snapshot())
		st := a.pool.Stats("b")
		require.Equal(t, uint64(4), st.Batches-base.Batches, "batches of 1, then 2, 2, 1")
		require.Equal(t, uint64(6), st.Messages-base.Messages)
		require.Equal(t, uint64(2), st.Hist[0]-base.Hist[0], "two batches of one")
		require.Equal(t, uint64(2), st.Hist[1]-base.Hist[1], "two batches of two")
	})
}

// perCaller checks that every caller's sequence arrives in order.
type perCaller struct {
	mu       sync.Mutex
	last     map[string]int64
	count    atomic.Int64
	disorder atomic.Int64
}

func (p *perCaller) Receive(c *actor.Context) {
	e, ok := c.Message().(*testpb.Echo)
	if !ok {
		return
	}
	p.mu.Lock()
	if prev, seen := p.last[e.Text]; (seen && e.N != prev+1) || (!seen && e.N != 0) {
		p.disorder.Add(1)
	}
	p.last[e.Text] = e.N
	p.mu.Unlock()
	p.count.Add(1)
}

func TestPerCallerOrderAcrossConcurrentCallers(t *testing.T) {
	callers, each := 100, 10000
	if raceEnabled {
		each = 2000 // the same shape, fewer messages under the race detector
	}
	a, b := pair(t, nil, 2, Config{})
	waitStatus(t, a.pool, "b", Connected)
	recv := &perCaller{last: map[string]int64{}}
	_, err := b.sys.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return recv }), "ordered")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := a.sys.NewSender()
			id := fmt.Sprint("caller-", c)
			for i := range each {
				h.SendNamed("b", "ordered", &testpb.Echo{Text: id, N: int64(i)})
			}
		}()
	}
	wg.Wait()
	eventually(t, "all delivered", func() bool { return recv.count.Load() == int64(callers*each) })
	require.Zero(t, recv.disorder.Load(), "per-caller order")
	st := a.pool.Stats("b")
	require.GreaterOrEqual(t, st.Messages, uint64(callers*each))
	t.Logf("%d messages in %d batches (mean %.1f)", st.Messages, st.Batches, st.MeanBatch)
}

func TestKillingOneProxyTearsDownAndRebuilds(t *testing.T) {
	eachNetwork(t, func(t *testing.T, net remote.Network) {
		a, _ := pair(t, net, 2, Config{})
		first := waitStatus(t, a.pool, "b", Connected)
		pool := a.pool.host.Route("b")
		require.NotNil(t, pool)
		old := pool.Proxies()
		a.sys.StopActor(old[0])
		eventually(t, "a new pool", func() bool {
			info := a.pool.ConnectionInfo("b")
			return info.Status == Connected && info.Builds == 2
		})
		again := a.pool.ConnectionInfo("b")
		require.Equal(t, first.Master, again.Master, "the same master rebuilt it")
		require.True(t, pool.Closed(), "the old pool was unpublished")
		for _, p := range a.pool.host.Route("b").Proxies() {
			require.NotContains(t, old, p)
		}
		allFourOps(t, a)
	})
}

func TestBoundedProxyUnderFlood(t *testing.T) {
	for _, policy := range []actor.MailboxPolicy{actor.FailFast, actor.Block} {
		t.Run(policy.String(), func(t *testing.T) {
			b := startNode(t, "b", nodeOpts{poolSize: 1})
			a := startNode(t, "a", nodeOpts{poolSize: 1, cfg: Config{ProxyQueue: 100, Policy: policy, ManualConnect: true}, seeds: []string{"b=" + b.n.Addr()}})
			h := newHolder()
			t.Cleanup(h.open)
			a.pool.onLink = h.hook
			require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
			waitStatus(t, a.pool, "b", Connected)
			a.sys.NewSender().SendNamed("b", "sink", &testpb.Echo{}) // the proxy blocks in its write
			eventually(t, "held", func() bool { return h.entered.Load() == 1 })

			var overloaded atomic.Int64
			cancel := a.sys.SubscribeDeadLetters(func(d actor.DeadLetter) {
				if errors.Is(d.Reason, actor.ErrOverloaded) {
					overloaded.Add(1)
				}
			})
			defer cancel()
			before := sinkCountLocal(b)
			var wg sync.WaitGroup
			payload := &testpb.Echo{Text: string(make([]byte, 1024))}
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := a.sys.NewSender()
					for range 200 {
						s.SendNamed("b", "sink", payload)
					}
				}()
			}
			if policy == actor.FailFast {
				wg.Wait()
				// The bound counts unprocessed messages, the one being written
				// included: 99 fit behind it.
				require.Equal(t, int64(1600-99), overloaded.Load(), "fail fast refused exactly the overflow, each a counted dead letter")
			} else {
				eventually(t, "the proxy queue is full", func() bool { return a.pool.Stats("b").QueueDepth >= 99 })
				require.Zero(t, overloaded.Load(), "block never refuses")
			}
			require.LessOrEqual(t, a.pool.Stats("b").QueueDepth, 100, "memory bounded: the queue never exceeds its bound")
			h.open()
			wg.Wait()
			want := int64(1600 + 1)
			if policy == actor.FailFast {
				want = 99 + 1
			}
			eventually(t, "what was queued is delivered", func() bool { return sinkCountLocal(b)-before == want })
		})
	}
}

// sinkCountLocal reads b's sink counter in-process.
func sinkCountLocal(b *tnode) int64 {
	v, err := b.sys.Call(context.Background(), "b", "sink_get", &testpb.Echo{})
	if err != nil {
		panic(err)
	}
	return v.(*testpb.Echo).N
}

func TestRepliesQueuedInADyingPoolAreReroutedNotLost(t *testing.T) {
	// b calls a; a's replies go through a's pool toward b. Hold a's proxy
	// links so replies queue there, then kill those links: the replies
	// must still reach b (natively), or b's calls would wait forever.
	b := startNode(t, "b", nodeOpts{poolSize: 1})
	a := startNode(t, "a", nodeOpts{poolSize: 1, cfg: Config{ManualConnect: true}, seeds: []string{"b=" + b.n.Addr()}})
	var mu sync.Mutex
	var links []poolpath.Link
	h := newHolder()
	t.Cleanup(h.open)
	a.pool.onLink = func(l poolpath.Link) {
		mu.Lock()
		links = append(links, l)
		mu.Unlock()
		h.hook(l)
	}
	require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
	waitStatus(t, a.pool, "b", Connected)
	waitStatus(t, b.pool, "a", Connected) // b's calls travel through b's pool

	const calls = 10
	res := make(chan error, calls)
	for range calls {
		go func() {
			_, err := b.sys.NewSender().Call(context.Background(), "a", "echo", &testpb.Echo{Text: "x"})
			res <- err
		}()
	}
	eventually(t, "every reply handed to a's pool, one batch held in its write", func() bool {
		return h.entered.Load() == 1 && a.n.Stats().RepliesPooled == calls
	})
	mu.Lock()
	for _, l := range links {
		l.Close(errors.New("test: pool link killed"))
	}
	mu.Unlock()
	h.open()
	for range calls {
		select {
		case err := <-res:
			require.NoError(t, err, "the reply was rerouted")
		case <-time.After(20 * time.Second):
			t.Fatal("a caller was left waiting: its reply was lost with the pool")
		}
	}
}

func TestProxyQueueIsBoundedInBytes(t *testing.T) {
	b := startNode(t, "b", nodeOpts{poolSize: 1})
	a := startNode(t, "a", nodeOpts{poolSize: 1, cfg: Config{ProxyQueueBytes: 64 << 10, Policy: actor.FailFast, ManualConnect: true}, seeds: []string{"b=" + b.n.Addr()}})
	h := newHolder()
	t.Cleanup(h.open)
	a.pool.onLink = h.hook
	require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
	waitStatus(t, a.pool, "b", Connected)
	big := &testpb.Blob{Data: make([]byte, 32<<10)}
	s := a.sys.NewSender()
	s.SendNamed("b", "sink", big) // taken and held in its write
	eventually(t, "held", func() bool { return h.entered.Load() == 1 })
	var refused atomic.Int64
	cancel := a.sys.SubscribeDeadLetters(func(d actor.DeadLetter) {
		if errors.Is(d.Reason, actor.ErrOverloaded) {
			refused.Add(1)
		}
	})
	defer cancel()
	for range 100 {
		s.SendNamed("b", "sink", big)
	}
	st := a.pool.Stats("b")
	require.LessOrEqual(t, st.QueueBytes, int64(64<<10)+int64(33<<10), "bytes stay bounded (64 KiB, plus the message being written)")
	require.Greater(t, refused.Load(), int64(90), "the overflow is refused, each a counted dead letter")
	h.open()
	eventually(t, "the queue drains and its bytes are given back", func() bool { return a.pool.Stats("b").QueueBytes == 0 })
}
