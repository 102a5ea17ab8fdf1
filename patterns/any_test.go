package patterns

import (
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

func TestCallAny(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt

	t.Run("local preferred, then cast to the others", func(t *testing.T) {
		// The local node is the slowest: it wins only by being called
		// first and alone.
		s := script(t, "a=sleep300:ok,*=ok")
		res, err := pt.CallAny(ctxT(t, 10*time.Second), []string{"b", "a", "c"}, "script", s)
		require.NoError(t, err)
		require.Equal(t, "a", res.Node)
		require.Equal(t, "a", res.Value.(*testpb.Echo).From)
		// Every node ran it once: a by the call, b and c by the casts.
		waitRuns(t, sys, s, map[string]int64{"a": 1, "b": 1, "c": 1})
		waitIdle(t, sys, pt)
	})

	t.Run("no local node: first success of the parallel calls", func(t *testing.T) {
		s := script(t, "*=ok")
		res, err := pt.CallAny(ctxT(t, 10*time.Second), []string{"b", "c"}, "script", s)
		require.NoError(t, err)
		require.Contains(t, []string{"b", "c"}, res.Node)
		require.Equal(t, res.Node, res.Value.(*testpb.Echo).From)
		waitRuns(t, sys, s, map[string]int64{"a": 0, "b": 1, "c": 1})
		waitIdle(t, sys, pt)
	})

	t.Run("the fastest success wins", func(t *testing.T) {
		s := script(t, "b=sleep300:ok,c=ok")
		res, err := pt.CallAny(ctxT(t, 10*time.Second), []string{"b", "c"}, "script", s)
		require.NoError(t, err)
		require.Equal(t, "c", res.Node)
		// b's result is discarded, but its call runs to the end.
		waitIdle(t, sys, pt, "b")
	})

	t.Run("all rejections", func(t *testing.T) {
		s := script(t, "a=sleep300:reject,*=reject")
		_, err := pt.CallAny(ctxT(t, 10*time.Second), []string{"a", "b", "c"}, "script", s)
		errs := allFailed(t, err)
		require.Len(t, errs, 3)
		require.Equal(t, "a", errs[0].Node, "the local node is called first, alone")
		require.ElementsMatch(t, []string{"a", "b", "c"}, errNodes(errs))
		for _, e := range errs {
			require.True(t, isRejection(e.Err), "%v", e)
		}
		require.True(t, isRejection(err), "errors.As reaches into the node errors")
		require.Contains(t, err.Error(), "call_any")
		waitRuns(t, sys, s, map[string]int64{"a": 1, "b": 1, "c": 1})
	})

	t.Run("unreachable skipped by default", func(t *testing.T) {
		s := script(t, "*=ok")
		res, err := pt.CallAny(ctxT(t, 10*time.Second), []string{missing, "b"}, "script", s)
		require.NoError(t, err)
		require.Equal(t, "b", res.Node)

		_, err = pt.CallAny(ctxT(t, 10*time.Second), []string{missing}, "script", s)
		require.Empty(t, allFailed(t, err), "ecall's {error, []}")

		_, err = pt.CallAny(ctxT(t, 10*time.Second), []string{missing, "b"}, "script", script(t, "b=reject"))
		errs := allFailed(t, err)
		require.Equal(t, []string{"b"}, errNodes(errs))
	})

	t.Run("unreachable counted with the option", func(t *testing.T) {
		_, err := pt.CallAny(ctxT(t, 10*time.Second), []string{missing}, "script", script(t, "*=ok"), UnreachableIsError())
		errs := allFailed(t, err)
		require.Equal(t, []string{missing}, errNodes(errs))
		require.ErrorIs(t, errs[0].Err, actor.ErrUnreachable)
		require.True(t, IsUnreachable(errs[0].Err))

		_, err = pt.CallAny(ctxT(t, 10*time.Second), []string{missing, "b"}, "script", script(t, "b=reject"), UnreachableIsError())
		errs = allFailed(t, err)
		require.ElementsMatch(t, []string{missing, "b"}, errNodes(errs))
	})

	t.Run("mixed: local rejection, a crash, a success", func(t *testing.T) {
		s := script(t, "a=sleep300:reject,b=panic,c=ok")
		res, err := pt.CallAny(ctxT(t, 10*time.Second), []string{"a", "b", "c"}, "script", s)
		require.NoError(t, err)
		require.Equal(t, "c", res.Node)
		waitRuns(t, sys, s, map[string]int64{"a": 1, "b": 1, "c": 1})
	})

	t.Run("mixed, all failed", func(t *testing.T) {
		s := script(t, "a=reject,b=panic,c=reject")
		_, err := pt.CallAny(ctxT(t, 10*time.Second), []string{"a", "b", missing, "c"}, "script", s)
		errs := allFailed(t, err)
		require.Len(t, errs, 3, "the missing node is skipped")
		require.Equal(t, "a", errs[0].Node)
		require.True(t, isRejection(errs[0].Err))
		for _, e := range errs[1:] {
			switch e.Node {
			case "b":
				require.True(t, isCrash(e.Err), "%v", e)
			case "c":
				require.True(t, isRejection(e.Err), "%v", e)
			default:
				t.Fatalf("unexpected %v", e)
			}
		}
	})
}
