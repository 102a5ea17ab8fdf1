package patterns

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

func TestEmptyLists(t *testing.T) {
	_, pt := localNode(t)
	ctx := ctxT(t, 10*time.Second)
	arg := &testpb.Echo{}
	for _, nodes := range [][]string{nil, {}} {
		_, err := pt.CallOne(ctx, nodes, "echo", arg)
		require.ErrorIs(t, err, ErrNoneAvailable)
		_, err = pt.CallAny(ctx, nodes, "echo", arg)
		require.ErrorIs(t, err, ErrNoneAvailable)
		res, err := pt.CallAll(ctx, nodes, "echo", arg)
		require.ErrorIs(t, err, ErrNoneAvailable)
		require.Nil(t, res)
		replies, rejects, err := pt.CallAllWait(ctx, nodes, "echo", arg)
		require.NoError(t, err)
		require.Empty(t, replies)
		require.Empty(t, rejects)
		_, err = pt.CastOne(nodes, "echo", arg)
		require.ErrorIs(t, err, ErrNoneAvailable)
		pt.CastAll(nodes, "echo", arg) // nothing to do, nothing to fail
	}
}

func TestDuplicatedNodes(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt
	ctx := ctxT(t, 10*time.Second)

	s := script(t, "*=ok")
	res, err := pt.CallAll(ctx, []string{"b", "c", "b", "a", "a"}, "script", s)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a", "a", "b", "b", "c"}, nodesOf(res), "one result per entry")
	waitRuns(t, sys, s, map[string]int64{"a": 2, "b": 2, "c": 1})

	s = script(t, "b=reject,*=ok")
	replies, rejects, err := pt.CallAllWait(ctx, []string{"b", "c", "b"}, "script", s)
	require.NoError(t, err)
	require.Equal(t, []string{"c"}, nodesOf(replies))
	require.Equal(t, []string{"b", "b"}, errNodes(rejects))

	s = script(t, "*=reject")
	_, err = pt.CallOne(ctx, []string{"b", "a", "b"}, "script", s)
	require.Equal(t, []string{"a", "b", "b"}, errNodes(allFailed(t, err)))

	// The local node listed twice: one entry is called first, alone; on
	// success the other entries, the second local one included, get a
	// cast.
	s = script(t, "*=ok")
	one, err := pt.CallAny(ctx, []string{"a", "b", "a"}, "script", s)
	require.NoError(t, err)
	require.Equal(t, "a", one.Node)
	waitRuns(t, sys, s, map[string]int64{"a": 2, "b": 1, "c": 0})
	waitIdle(t, sys, pt)
}

func TestLargeResults(t *testing.T) {
	cl := newCluster(t)
	pt := cl.pt
	nodes := []string{"a", "b", "c"}

	const size = 1 << 20
	res, err := pt.CallAll(ctxT(t, 30*time.Second), nodes, "big", &testpb.Echo{N: size})
	require.NoError(t, err)
	require.ElementsMatch(t, nodes, nodesOf(res))
	for _, r := range res {
		b := r.Value.(*testpb.Blob).Data
		require.Len(t, b, size, r.Node)
		for i := range b {
			if b[i] != byte(i*7) {
				t.Fatalf("%s: byte %d is %d, want %d", r.Node, i, b[i], byte(i*7))
			}
		}
	}

	const count = 100_000
	replies, rejects, err := pt.CallAllWait(ctxT(t, 30*time.Second), nodes, "numbers", &testpb.Echo{N: count})
	require.NoError(t, err)
	require.Empty(t, rejects)
	require.ElementsMatch(t, nodes, nodesOf(replies))
	for _, r := range replies {
		v := r.Value.(*testpb.Numbers).Values
		require.Len(t, v, count, r.Node)
		for i, x := range v {
			if x != int64(i)*3 {
				t.Fatalf("%s: value %d is %d, want %d", r.Node, i, x, int64(i)*3)
			}
		}
	}
}

func TestStartStop(t *testing.T) {
	sys, pt := localNode(t)
	_, err := Start(sys)
	require.ErrorIs(t, err, actor.ErrNameTaken, "one per node")

	// A call in flight when Patterns stops ends with the coordinator
	// error; later calls are refused.
	coord := make(chan actor.PID, 1)
	h := &hooks{coordinator: func(pid actor.PID) { coord <- pid }}
	errc := make(chan error, 1)
	ctx, s := ctxT(t, 30*time.Second), script(t, "*=sleep20000:ok")
	go func() {
		_, err := pt.CallAll(ctx, []string{"a"}, "script", s, withHooks(h))
		errc <- err
	}()
	recv(t, "the coordinator", coord)
	eventually(t, "the call sleeping", func() bool { n, _ := nodeStats(t, sys, "a"); return n == 1 })
	require.NoError(t, pt.Stop(ctxT(t, 10*time.Second)))
	err = recv(t, "the group call", errc)
	coordinatorError(t, err, "call_all", []string{"a"})
	require.ErrorIs(t, err, ErrCoordinatorStopped)
	eventually(t, "the call cancelled", func() bool { n, c := nodeStats(t, sys, "a"); return n == 0 && c == 1 })

	_, err = pt.CallAny(ctx, []string{"a"}, "script", s)
	require.ErrorIs(t, err, ErrStopped)
	require.NoError(t, pt.Stop(ctxT(t, 10*time.Second)), "idempotent")
}

func TestDeadline(t *testing.T) {
	_, pt := localNode(t)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, _, err := pt.CallAllWait(ctx, []string{"a", "a"}, "script", script(t, "*=sleep20000:ok"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	coordinatorError(t, err, "call_all_wait", []string{"a", "a"})
	require.Less(t, time.Since(start), 10*time.Second)
}
