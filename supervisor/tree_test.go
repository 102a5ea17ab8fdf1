package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

// TestTrees: every top-level supervisor is a root, nested ones hang under
// their parent, restart counts and the recent restarts show, a stopped
// supervisor leaves, and a supervisor started by a plain actor is a root
// of its own.
func TestTrees(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	outer, err := StartNamed(sys, Spec{Strategy: RestForOne, Intensity: 5, Period: time.Minute, Children: []ChildSpec{
		workerSpec(rec, "a"),
		Nested("inner", Spec{Children: []ChildSpec{workerSpec(rec, "b1"), workerSpec(rec, "b2")}}),
	}}, "outer")
	require.NoError(t, err)
	other, err := Start(sys, Spec{Children: []ChildSpec{workerSpec(rec, "c")}})
	require.NoError(t, err)

	inner := pids(t, sys, outer)["inner"]
	b1 := pids(t, sys, inner)["b1"]
	require.Zero(t, Restarts(sys))
	sys.Send(b1, "crash")
	waitRestarted(t, sys, inner, "b1", b1)
	require.Equal(t, uint64(1), Restarts(sys), "one restart, counted on the System")

	trees := Trees(ctxT(t), sys)
	require.Len(t, trees, 2)
	o := trees[0]
	require.NoError(t, o.Err)
	require.Equal(t, outer, o.PID)
	require.Equal(t, "outer", o.Name)
	require.Equal(t, RestForOne, o.Strategy)
	require.Equal(t, 5, o.Intensity)
	require.Zero(t, o.RecentRestarts, "the restart was inner's")
	require.Len(t, o.Children, 2)
	require.Equal(t, "a", o.Children[0].ID)
	require.Nil(t, o.Children[0].Tree, "a worker has no tree")
	in := o.Children[1].Tree
	require.NotNil(t, in, "inner is walked")
	require.Equal(t, inner, in.PID)
	require.Equal(t, 1, in.RecentRestarts)
	require.Equal(t, "b1", in.Children[0].ID)
	require.Equal(t, 1, in.Children[0].Restarts)
	require.Zero(t, in.Children[1].Restarts)
	require.Equal(t, other, trees[1].PID)
	drawn := o.String()
	require.Contains(t, drawn, `supervisor `+outer.String()+` "outer" rest-for-one, 0/5 restarts in 1m0s`)
	require.Contains(t, drawn, "    b1 ")
	require.Contains(t, drawn, "(permanent), 1 restarts")

	// A supervisor under a plain actor is a root; stopping it removes it.
	host, err := sys.SpawnFunc(func(c *actor.Context) {
		if _, ok := c.Message().(actor.Started); ok {
			_, err := c.Spawn(Props(Spec{Children: []ChildSpec{workerSpec(rec, "d")}}))
			require.NoError(t, err)
		}
	})
	require.NoError(t, err)
	require.Len(t, Trees(ctxT(t), sys), 3)
	require.NoError(t, sys.StopActorWait(ctxT(t), host))
	require.NoError(t, sys.StopActorWait(ctxT(t), other))
	trees = Trees(ctxT(t), sys)
	require.Len(t, trees, 1, "stopped supervisors leave the registry")
	require.Equal(t, outer, trees[0].PID)
}

// TestTreesBusySupervisor: a supervisor that cannot answer within ctx is
// reported with Err; the others still are.
func TestTreesBusySupervisor(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	gate := make(chan struct{})
	busy, err := Start(sys, Spec{Children: []ChildSpec{workerSpec(rec, "a")}})
	require.NoError(t, err)
	free, err := Start(sys, Spec{Children: []ChildSpec{workerSpec(rec, "b")}})
	require.NoError(t, err)
	// busy starts a child whose Started blocks: it handles nothing else.
	started := make(chan struct{})
	go func() {
		defer close(started)
		_, _ = StartChild(context.Background(), sys, busy, ChildSpec{ID: "slow", Props: actor.PropsFromFunc(func(c *actor.Context) {
			if _, ok := c.Message().(actor.Started); ok {
				<-gate
			}
		})})
	}()
	t.Cleanup(func() { close(gate); <-started })
	eventually(t, "busy blocked in a child's Started", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := WhichChildren(ctx, sys, busy)
		return err != nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	trees := Trees(ctx, sys)
	require.Len(t, trees, 2)
	require.Equal(t, busy, trees[0].PID)
	require.ErrorIs(t, trees[0].Err, context.DeadlineExceeded)
	require.Contains(t, trees[0].String(), "tree of "+busy.String())
	require.Equal(t, free, trees[1].PID)
	require.NoError(t, trees[1].Err)
}
