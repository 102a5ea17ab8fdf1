package patterns

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

// Cancelling ctx stops the coordinator and its callers before the call
// returns, and cancels their calls on every node.
func TestCancelStopsEverything(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt
	nodes := []string{"a", "b", "c"}
	// How many calls are in flight once the call is under way: CallOne
	// and CallAny call the local node alone first.
	inFlight := map[string]int{"call_one": 1, "call_any": 1, "call_all": 3, "call_all_wait": 3}
	for _, gc := range groupCalls {
		t.Run(gc.name, func(t *testing.T) {
			cancelledBefore := 0
			for _, n := range nodes {
				_, c := nodeStats(t, sys, n)
				cancelledBefore += c
			}
			started := make(chan actor.PID, 8)
			h := &hooks{
				coordinator: func(pid actor.PID) { started <- pid },
				caller:      func(_ string, pid actor.PID) { started <- pid },
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			s := script(t, "*=sleep20000:ok")
			go func() { errc <- gc.call(ctx, pt, nodes, "script", s, withHooks(h)) }()
			eventually(t, "the calls sleeping", func() bool {
				total := 0
				for _, n := range nodes {
					s, _ := nodeStats(t, sys, n)
					total += s
				}
				return total == inFlight[gc.name]
			})
			cancel()
			err := recv(t, "the group call", errc)
			require.ErrorIs(t, err, context.Canceled)
			coordinatorError(t, err, gc.name, nodes)

			// Gone when the call returns: the coordinator and every caller.
			close(started)
			n := 0
			for pid := range started {
				require.Equal(t, -1, sys.MailboxLen(pid), "%s outlived the call", pid)
				n++
			}
			require.Equal(t, 1+inFlight[gc.name], n)
			// The calls were cancelled on the nodes, not left to finish.
			waitIdle(t, sys, pt, nodes...)
			cancelledAfter := 0
			for _, n := range nodes {
				_, c := nodeStats(t, sys, n)
				cancelledAfter += c
			}
			require.Equal(t, cancelledBefore+inFlight[gc.name], cancelledAfter)
		})
	}
}

// After the answer, callers whose results are no longer wanted finish
// their calls, even when the owner cancels its ctx at once.
func TestLeftoversFinish(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt
	_, cancelledBefore := nodeStats(t, sys, "c")
	ctx, cancel := context.WithCancel(context.Background())
	s := script(t, "b=ok,c=sleep300:ok")
	res, err := pt.CallAny(ctx, []string{"b", "c"}, "script", s)
	cancel()
	require.NoError(t, err)
	require.Equal(t, "b", res.Node)
	eventually(t, "c's call running", func() bool { return runs(t, sys, "c", s) == 1 })
	waitIdle(t, sys, pt, "c")
	_, cancelledAfter := nodeStats(t, sys, "c")
	require.Equal(t, cancelledBefore, cancelledAfter, "c's call ran to its end")
}

// A node that dies under a call is unreachable (actor.ErrNodeDown):
// skipped by default, counted with the option, a reject for CallAllWait.
func TestNodeDownIsUnreachable(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt
	nodes := []string{"b", "c"}
	s := script(t, "b=ok,c=sleep20000:ok")
	ctx := ctxT(t, 30*time.Second)
	type out struct {
		res     []Result
		rejects []NodeError
		err     error
	}
	skipped, counted, wait := make(chan out, 1), make(chan out, 1), make(chan out, 1)
	go func() {
		var o out
		o.res, o.err = pt.CallAll(ctx, nodes, "script", s)
		skipped <- o
	}()
	go func() {
		var o out
		o.res, o.err = pt.CallAll(ctx, nodes, "script", s, UnreachableIsError())
		counted <- o
	}()
	go func() {
		var o out
		o.res, o.rejects, o.err = pt.CallAllWait(ctx, nodes, "script", s)
		wait <- o
	}()
	eventually(t, "three calls sleeping on c", func() bool { n, _ := nodeStats(t, sys, "c"); return n == 3 })
	cl.c.Kill()

	o := recv(t, "CallAll", skipped)
	require.NoError(t, o.err)
	require.Equal(t, []string{"b"}, nodesOf(o.res))

	o = recv(t, "CallAll with the option", counted)
	ne := nodeError(t, o.err)
	require.Equal(t, "c", ne.Node)
	require.ErrorIs(t, o.err, actor.ErrNodeDown)
	require.True(t, IsUnreachable(ne.Err))

	o = recv(t, "CallAllWait", wait)
	require.NoError(t, o.err)
	require.Equal(t, []string{"b"}, nodesOf(o.res))
	require.Equal(t, []string{"c"}, errNodes(o.rejects))
	require.ErrorIs(t, o.rejects[0].Err, actor.ErrNodeDown)
	waitIdle(t, sys, pt, "b")
}
