package patterns

import (
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

func TestCallAllWait(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt

	t.Run("mixed results", func(t *testing.T) {
		s := script(t, "a=reject,b=panic,c=ok")
		replies, rejects, err := pt.CallAllWait(ctxT(t, 10*time.Second), []string{"a", "b", "c", missing}, "script", s)
		require.NoError(t, err)
		require.Equal(t, []string{"c"}, nodesOf(replies))
		require.ElementsMatch(t, []string{"a", "b", missing}, errNodes(rejects))
		for _, r := range rejects {
			switch r.Node {
			case "a":
				require.True(t, isRejection(r.Err), "%v", r)
			case "b":
				require.True(t, isCrash(r.Err), "%v", r)
			case missing:
				require.ErrorIs(t, r.Err, actor.ErrUnreachable)
				require.True(t, IsUnreachable(r.Err))
			}
		}
		waitRuns(t, sys, s, map[string]int64{"a": 1, "b": 1, "c": 1})
	})

	t.Run("arrival order of both lists", func(t *testing.T) {
		s := script(t, "a=sleep300:ok,b=sleep300:reject,c=ok")
		replies, rejects, err := pt.CallAllWait(ctxT(t, 10*time.Second), []string{"a", "b", "c", missing}, "script", s)
		require.NoError(t, err)
		require.Equal(t, []string{"c", "a"}, nodesOf(replies))
		require.Equal(t, []string{missing, "b"}, errNodes(rejects))
	})

	t.Run("the option changes nothing", func(t *testing.T) {
		s := script(t, "*=ok")
		replies, rejects, err := pt.CallAllWait(ctxT(t, 10*time.Second), []string{"b", missing}, "script", s, UnreachableIsError())
		require.NoError(t, err)
		require.Equal(t, []string{"b"}, nodesOf(replies))
		require.Equal(t, []string{missing}, errNodes(rejects))
	})

	t.Run("every node unreachable", func(t *testing.T) {
		replies, rejects, err := pt.CallAllWait(ctxT(t, 10*time.Second), []string{missing, missing}, "script", script(t, "*=ok"))
		require.NoError(t, err, "never fails")
		require.Empty(t, replies)
		require.Equal(t, []string{missing, missing}, errNodes(rejects))
	})
	waitIdle(t, sys, pt, "a", "b", "c")
}
