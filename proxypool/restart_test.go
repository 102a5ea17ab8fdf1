package proxypool

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/poolpath"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// TestPeerRestartGetsAFreshPool: the peer is killed and restarted under
// the same name. The master goes down at once, builds a fresh pool for the
// new incarnation, calls from the peer back to us succeed through our
// pool toward it, and a reply computed for the old incarnation is kept out
// of the new pool by the incarnation guard.
func TestPeerRestartGetsAFreshPool(t *testing.T) {
	a := startNode(t, "a", nodeOpts{poolSize: 2})
	held, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	require.NoError(t, a.sys.Register("slow_ack", func(ctx context.Context, _ proto.Message) (proto.Message, error) {
		once.Do(func() { held <- struct{}{} })
		<-release
		return &testpb.Echo{Text: "ack"}, nil
	}))
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	b1 := testnode.Start(t, testnode.Options{Name: "b", Seeds: []string{"a=" + a.n.Addr()}})
	require.NoError(t, a.n.Connect(ctxT(t), "b", b1.Addr))
	first := waitStatus(t, a.pool, "b", Connected)
	require.Equal(t, b1.Incarnation, first.Incarnation)

	// b1 calls a's slow_ack through its pool; it will be dead by the time
	// a answers.
	go func() {
		_, _ = a.sys.Call(context.Background(), "b", "call_node", &testpb.Echo{Text: "a slow_ack", N: 1})
	}()
	<-held

	b1.Kill()
	down := waitStatus(t, a.pool, "b", Down)
	require.Equal(t, first.Master, down.Master, "the master survives")

	b2 := testnode.Start(t, testnode.Options{Name: "b", Seeds: []string{"a=" + a.n.Addr()}})
	require.NoError(t, a.n.Connect(ctxT(t), "b", b2.Addr))
	eventually(t, "a pool for the new incarnation", func() bool {
		info := a.pool.ConnectionInfo("b")
		return info.Status == Connected && info.Incarnation == b2.Incarnation
	})
	again := a.pool.ConnectionInfo("b")
	require.Equal(t, first.Master, again.Master, "the same master built it")
	require.Equal(t, 2, again.Builds)

	// The reply for b1's call is ready now, with b2's pool published: the
	// guard must keep it out.
	divertedBefore := a.n.Stats().GuardDiverted
	close(release)
	eventually(t, "the stale reply diverted", func() bool { return a.n.Stats().GuardDiverted > divertedBefore })

	// 20 calls from the new peer back to us succeed; our replies travel
	// through our pool toward b2.
	repliesBefore := a.pool.Stats("b").Replies
	v, err := a.sys.Call(ctxT(t), "b", "call_node", &testpb.Echo{Text: "a echo", N: 20})
	require.NoError(t, err)
	require.Equal(t, int64(20), v.(*testpb.Echo).N, v.(*testpb.Echo).Text)
	require.Zero(t, a.pool.Stats("b").GuardViolations, "no entry was ever written into a pool of another incarnation")
	// A reply's count is taken after the pool took it, and the pool may
	// have written it (and b answered our call) before that.
	eventually(t, "20 replies counted through our pool", func() bool { return a.pool.Stats("b").Replies-repliesBefore >= 20 })
}

// TestPoolDeathFailsInFlightAndQueuedCalls: calls running on the peer fail
// with ErrNodeDown within a second of its death; calls still queued in a
// proxy fail with ErrNotSent and are never written.
func TestPoolDeathFailsInFlightAndQueuedCalls(t *testing.T) {
	a := startNode(t, "a", nodeOpts{poolSize: 2, cfg: Config{ManualConnect: true}})
	var mu sync.Mutex
	var links []poolpath.Link
	a.pool.onLink = func(l poolpath.Link) {
		mu.Lock()
		links = append(links, l)
		mu.Unlock()
	}
	b := testnode.Start(t, testnode.Options{Name: "b"})
	require.NoError(t, a.n.Connect(ctxT(t), "b", b.Addr))
	require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
	waitStatus(t, a.pool, "b", Connected)

	const inflight, queued = 20, 10
	type res struct {
		err error
		at  time.Time
	}
	running := make(chan res, inflight)
	for range inflight {
		go func() {
			_, err := a.sys.NewSender().Call(context.Background(), "b", "sleep", &testpb.Sleep{Millis: 60000})
			running <- res{err, time.Now()}
		}()
	}
	eventually(t, "all calls running on b", func() bool {
		v, err := a.sys.Call(ctxT(t), "b", "stats", &testpb.Echo{})
		return err == nil && sleepingOf(v) == inflight
	})

	// Hold one proxy's writes: a primer is taken and held; more calls from
	// the same caller queue behind it.
	h2 := newHolder()
	t.Cleanup(h2.open)
	mu.Lock()
	for _, l := range links {
		h2.hook(l)
	}
	mu.Unlock()
	caller := a.sys.NewSender()
	waiting := make(chan res, queued+1)
	call := func() {
		_, err := caller.Call(context.Background(), "b", "echo", &testpb.Echo{})
		waiting <- res{err, time.Now()}
	}
	go call()
	eventually(t, "the primer held in its write", func() bool { return h2.entered.Load() == 1 })
	for range queued {
		go call()
	}
	eventually(t, "the rest queued", func() bool { return a.pool.Stats("b").QueueDepth == queued })

	killed := time.Now()
	b.Kill()
	var worst time.Duration
	for range inflight {
		r := <-running
		require.ErrorIs(t, r.err, actor.ErrNodeDown)
		require.Equal(t, actor.MayHaveExecuted, actor.Outcome(r.err))
		worst = max(worst, r.at.Sub(killed))
	}
	t.Logf("%d in-flight calls failed within %v of the kill", inflight, worst)
	require.Less(t, worst, time.Second)

	var notSent, nodeDown int
	for range queued + 1 {
		r := <-waiting
		switch {
		case actor.Outcome(r.err) == actor.NotExecuted:
			require.ErrorIs(t, r.err, actor.ErrNotSent)
			notSent++
		default:
			require.ErrorIs(t, r.err, actor.ErrNodeDown) // the held primer: claimed for its write
			nodeDown++
		}
	}
	require.Equal(t, queued, notSent, "queued calls are not sent")
	require.Equal(t, 1, nodeDown)
}

func sleepingOf(v proto.Message) int {
	var c, s int
	_, _ = fmt.Sscanf(v.(*testpb.Echo).Text, "cancelled=%d sleeping=%d", &c, &s)
	return s
}
