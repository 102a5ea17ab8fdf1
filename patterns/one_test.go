package patterns

import (
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

func TestCallOne(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt

	t.Run("local first, and only", func(t *testing.T) {
		s := script(t, "*=ok")
		res, err := pt.CallOne(ctxT(t, 10*time.Second), []string{"b", "c", "a"}, "script", s)
		require.NoError(t, err)
		require.Equal(t, "a", res.Node)
		require.Equal(t, int64(0), runs(t, sys, "b", s), "one success is enough")
		require.Equal(t, int64(0), runs(t, sys, "c", s))
	})

	t.Run("one at a time, in random order", func(t *testing.T) {
		s := script(t, "*=ok")
		seen := map[string]int{}
		for range 40 {
			res, err := pt.CallOne(ctxT(t, 10*time.Second), []string{"b", "c"}, "script", s)
			require.NoError(t, err)
			seen[res.Node]++
		}
		require.Equal(t, 40, seen["b"]+seen["c"])
		require.NotZero(t, seen["b"], "b never chosen first in 40 tries")
		require.NotZero(t, seen["c"], "c never chosen first in 40 tries")
		require.Equal(t, int64(seen["b"]), runs(t, sys, "b", s), "only the chosen node ran it")
		require.Equal(t, int64(seen["c"]), runs(t, sys, "c", s))
	})

	t.Run("a rejection is recorded and the next node tried", func(t *testing.T) {
		s := script(t, "a=reject,b=panic,c=ok")
		res, err := pt.CallOne(ctxT(t, 10*time.Second), []string{"b", "c", "a"}, "script", s)
		require.NoError(t, err)
		require.Equal(t, "c", res.Node)
		require.Equal(t, int64(1), runs(t, sys, "a", s), "the local node was tried first")
	})

	t.Run("all failed, in the order tried", func(t *testing.T) {
		s := script(t, "a=reject,b=panic,c=reject")
		_, err := pt.CallOne(ctxT(t, 10*time.Second), []string{"b", missing, "a", "c"}, "script", s)
		errs := allFailed(t, err)
		require.Len(t, errs, 3, "the missing node is skipped")
		require.Equal(t, "a", errs[0].Node)
		require.ElementsMatch(t, []string{"b", "c"}, errNodes(errs[1:]))
		require.Contains(t, err.Error(), "call_one")
		waitRuns(t, sys, s, map[string]int64{"a": 1, "b": 1, "c": 1})
	})

	t.Run("unreachable skipped or counted", func(t *testing.T) {
		s := script(t, "*=ok")
		_, err := pt.CallOne(ctxT(t, 10*time.Second), []string{missing}, "script", s)
		require.Empty(t, allFailed(t, err))
		_, err = pt.CallOne(ctxT(t, 10*time.Second), []string{missing}, "script", s, UnreachableIsError())
		errs := allFailed(t, err)
		require.Equal(t, []string{missing}, errNodes(errs))
		require.ErrorIs(t, err, actor.ErrUnreachable)

		res, err := pt.CallOne(ctxT(t, 10*time.Second), []string{missing, "b"}, "script", s, UnreachableIsError())
		require.NoError(t, err)
		require.Equal(t, "b", res.Node)
	})
	waitIdle(t, sys, pt, "a", "b", "c")
}

func TestCasts(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt

	t.Run("CastOne prefers the local node", func(t *testing.T) {
		s := script(t, "*=ok")
		node, err := pt.CastOne([]string{"b", "a", "c"}, "script", s)
		require.NoError(t, err)
		require.Equal(t, "a", node)
		waitRuns(t, sys, s, map[string]int64{"a": 1})
		require.Equal(t, int64(0), runs(t, sys, "b", s))
	})

	t.Run("CastOne picks a random node otherwise", func(t *testing.T) {
		s := script(t, "*=ok")
		seen := map[string]int64{}
		for range 40 {
			node, err := pt.CastOne([]string{"b", "c"}, "script", s)
			require.NoError(t, err)
			seen[node]++
		}
		require.NotZero(t, seen["b"])
		require.NotZero(t, seen["c"])
		waitRuns(t, sys, s, map[string]int64{"b": seen["b"], "c": seen["c"], "a": 0})
	})

	t.Run("CastAll reaches every entry", func(t *testing.T) {
		s := script(t, "*=ok")
		pt.CastAll([]string{"a", "b", "c", "b", missing}, "script", s)
		waitRuns(t, sys, s, map[string]int64{"a": 1, "b": 2, "c": 1})
	})
}
