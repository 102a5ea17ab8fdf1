package remote

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// The branches of a call's delivery (deliver, pushPooled, pushNative)
// when the pool it is routed to does not take it: each test runs one,
// and asserts what the caller is told, what ran on b, and the counters.

// countFn registers "count" on b: it counts the calls that ran.
func countFn(t *testing.T, b *Node) *atomic.Int64 {
	t.Helper()
	var ran atomic.Int64
	require.NoError(t, b.System().Register("count", func(_ context.Context, arg proto.Message) (proto.Message, error) {
		ran.Add(1)
		return arg, nil
	}))
	return &ran
}

// A proxy that ended dropped its queue (DropQueued) while its pool is
// still published: a call routed there is refused (errPathClosed) before
// it was queued, so it is still the caller's, and it goes on natively,
// once. Mutation: returning the refusal instead fails with ErrNotSent
// and ran 0; re-routing without passing over the refusing pool loops.
func TestACallRefusedByAClosingPoolGoesNatively(t *testing.T) {
	_, asys, a, b, sink := fenceNet(t)
	ran := countFn(t, b)
	h := startHandPool(t, asys, a, "b")
	h.halt()
	h.pl.DropQueued(errors.New("test: proxy ended"))
	require.Same(t, h.pool, (*host)(a).route("b"), "the pool is still routed")

	refused := 0
	a.afterPoolRefused = func() { refused++ } // runs on the caller's goroutine
	s0 := a.Stats()
	for _, sender := range []*actor.Sender{nil, asys.NewSender()} { // the root handle, and an actor's
		var v proto.Message
		var err error
		if sender == nil {
			v, err = asys.Call(context.Background(), "b", "count", &testpb.Echo{N: 7})
		} else {
			v, err = sender.Call(context.Background(), "b", "count", &testpb.Echo{N: 7})
		}
		require.NoError(t, err)
		require.Equal(t, int64(7), v.(*testpb.Echo).N)
	}
	s1 := a.Stats()
	require.Equal(t, 2, refused, "each call was pushed into the pool first")
	require.Equal(t, int64(2), ran.Load(), "each call ran once")
	require.Equal(t, uint64(2), s1.CallsNative-s0.CallsNative)
	require.Equal(t, s0.CallsPooled, s1.CallsPooled)
	require.Equal(t, 0, s1.Pending)
	require.Zero(t, (*host)(a).poolStatsFor("b").Messages.Load(), "nothing went through the pool")

	// A send takes the same way (oneWay's branch, for comparison).
	asys.NewSender().SendNamed("b", "order", &testpb.Echo{N: 1})
	waitFor(t, "the send delivered natively", func() bool { return sink.has(1) })
	s2 := a.Stats()
	require.Equal(t, uint64(1), s2.SendsNative-s1.SendsNative)
	require.Equal(t, s1.SendsPooled, s2.SendsPooled)
}

// A fail-fast pool whose proxy is full refuses a call with
// ErrOverloaded: the caller is told at once, not executed, and the call
// never runs nor goes natively (the pool is the route; falling back
// would overtake what the pool holds). Mutation: treating every pool
// error as a fallback makes the call succeed natively.
func TestACallRefusedByAFullFailFastPoolIsNotExecuted(t *testing.T) {
	_, asys, a, b, sink := fenceNet(t)
	ran := countFn(t, b)
	h := dialHandPool(t, a, "b")
	h.halt()
	pool, err := (*host)(a).publishPool("b", h.pl.Incarnation(), []actor.PID{{Node: "a", Incarnation: asys.Incarnation(), ID: 1}},
		poolOptions{Links: []*poolLink{h.pl}, QueueEntries: 1, FailFast: true})
	require.NoError(t, err)
	h.pool = pool
	asys.NewSender().SendNamed("b", "order", &testpb.Echo{N: 1}) // fills the one entry
	require.Equal(t, 1, h.pl.QueueLen())

	s0 := a.Stats()
	_, err = asys.Call(context.Background(), "b", "count", &testpb.Echo{N: 2})
	require.ErrorIs(t, err, actor.ErrOverloaded)
	var ae *actor.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, actor.NotExecuted, ae.Outcome)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	require.Equal(t, pool.inc, ae.Incarnation)
	s1 := a.Stats()
	require.Equal(t, s0.CallsPooled, s1.CallsPooled)
	require.Equal(t, s0.CallsNative, s1.CallsNative)
	require.Equal(t, 0, s1.Pending, "the refused call is not left pending")
	require.Equal(t, 1, h.pl.QueueLen(), "the refused call is not queued")

	// Nothing of it reaches b: the queued send is delivered once the
	// proxy drains, and a later call over the native path runs alone.
	(*host)(a).unpublishPool(pool, errors.New("test: over"))
	h.pool = nil
	h.drain(t)
	waitFor(t, "the pooled send delivered", func() bool { return sink.has(1) })
	_, err = asys.Call(context.Background(), "b", "count", &testpb.Echo{N: 3})
	require.NoError(t, err)
	require.Equal(t, int64(1), ran.Load(), "the refused call ran on b")
}

// A request pinned to an incarnation that is not the one the pool
// serves fails before anything is queued: ErrNoProcess, not executed.
// The same request without a pool fails the same way on the native
// path.
func TestARequestForAnotherIncarnationIsRefusedOnBothPaths(t *testing.T) {
	_, asys, a, _, _ := fenceNet(t)
	info, ok := a.Peer("b")
	require.True(t, ok)
	stale := actor.PID{Node: "b", Incarnation: info.Incarnation ^ 1, ID: 1}
	check := func(path string) {
		t.Helper()
		s0 := a.Stats()
		_, err := asys.Request(context.Background(), stale, &testpb.Echo{N: 1})
		require.ErrorIs(t, err, actor.ErrNoProcess, path)
		require.Equal(t, actor.NotExecuted, actor.Outcome(err), path)
		s1 := a.Stats()
		require.Equal(t, s0.CallsPooled, s1.CallsPooled, path)
		require.Equal(t, s0.CallsNative, s1.CallsNative, path)
		require.Equal(t, 0, s1.Pending, path)
	}
	check("native")
	h := startHandPool(t, asys, a, "b")
	require.Same(t, h.pool, (*host)(a).route("b"))
	check("pooled")
	require.Zero(t, (*host)(a).poolStatsFor("b").Messages.Load(), "nothing went through the pool")
}
