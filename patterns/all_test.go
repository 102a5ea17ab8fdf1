package patterns

import (
	"errors"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// nodeError unpacks the NodeError CallAll fails with.
func nodeError(t *testing.T, err error) NodeError {
	t.Helper()
	var ne NodeError
	require.True(t, errors.As(err, &ne), "want a NodeError, got %v", err)
	return ne
}

func TestCallAll(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt

	t.Run("success", func(t *testing.T) {
		s := script(t, "*=ok")
		res, err := pt.CallAll(ctxT(t, 10*time.Second), []string{"a", "b", "c"}, "script", s)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"a", "b", "c"}, nodesOf(res))
		for _, r := range res {
			require.Equal(t, r.Node, r.Value.(*testpb.Echo).From, "results are tagged with their node")
		}
		waitRuns(t, sys, s, map[string]int64{"a": 1, "b": 1, "c": 1})
	})

	t.Run("the first rejection ends it without waiting for the rest", func(t *testing.T) {
		// The others sleep far beyond ctx: waiting for them would end
		// the call with ctx's error instead of b's rejection.
		s := script(t, "b=reject,*=sleep20000:ok")
		_, err := pt.CallAll(ctxT(t, 3*time.Second), []string{"a", "b", "c"}, "script", s)
		ne := nodeError(t, err)
		require.Equal(t, "b", ne.Node)
		require.True(t, isRejection(ne.Err), "%v", ne.Err)
		require.Equal(t, actor.Executed, actor.Outcome(err))
	})

	t.Run("a crash on one node", func(t *testing.T) {
		s := script(t, "c=panic,*=ok")
		_, err := pt.CallAll(ctxT(t, 10*time.Second), []string{"a", "b", "c"}, "script", s)
		ne := nodeError(t, err)
		require.Equal(t, "c", ne.Node)
		require.True(t, isCrash(ne.Err), "%v", ne.Err)
	})

	t.Run("unreachable skipped by default", func(t *testing.T) {
		s := script(t, "*=ok")
		res, err := pt.CallAll(ctxT(t, 10*time.Second), []string{"b", missing, "c"}, "script", s)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"b", "c"}, nodesOf(res))

		_, err = pt.CallAll(ctxT(t, 10*time.Second), []string{missing, missing}, "script", s)
		require.ErrorIs(t, err, ErrNoneAvailable, "none reachable")
	})

	t.Run("unreachable counted with the option", func(t *testing.T) {
		s := script(t, "*=ok")
		_, err := pt.CallAll(ctxT(t, 10*time.Second), []string{"b", missing, "c"}, "script", s, UnreachableIsError())
		ne := nodeError(t, err)
		require.Equal(t, missing, ne.Node)
		require.ErrorIs(t, err, actor.ErrUnreachable)
		require.True(t, IsUnreachable(ne.Err))
	})

	t.Run("arrival order", func(t *testing.T) {
		s := script(t, "b=sleep300:ok,c=ok")
		for _, order := range [][]string{{"b", "c"}, {"c", "b"}} {
			res, err := pt.CallAll(ctxT(t, 10*time.Second), order, "script", s)
			require.NoError(t, err)
			require.Equal(t, []string{"c", "b"}, nodesOf(res), "the slow node comes last, whatever the list order")
		}
	})

	waitIdle(t, sys, pt, "a", "b", "c")
}
