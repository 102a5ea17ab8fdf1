package supervisor

import (
	"context"
	"errors"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

func TestDynamicChildren(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	ctx := ctxT(t)
	sup, err := Start(sys, Spec{Children: []ChildSpec{workerSpec(rec, "a")}})
	require.NoError(t, err)

	// StartChild appends and starts.
	restarts := make(chan actor.Restarting, 1)
	dyn := ChildSpec{ID: "dyn", Name: "dyn", Props: worker{id: "dyn", rec: rec, restarts: restarts}.props()}
	pid, err := StartChild(ctx, sys, sup, dyn)
	require.NoError(t, err)
	require.False(t, pid.IsZero())
	kids, err := WhichChildren(ctx, sys, sup)
	require.NoError(t, err)
	require.Equal(t, []ChildInfo{
		{ID: "a", PID: kids[0].PID, Restart: Permanent},
		{ID: "dyn", PID: pid, Name: "dyn", Restart: Permanent},
	}, kids)

	// The same ID again, running: taken.
	_, err = StartChild(ctx, sys, sup, dyn)
	require.ErrorIs(t, err, ErrIDTaken)
	require.ErrorContains(t, err, `"dyn"`)

	// A running child cannot be restarted or deleted.
	_, err = RestartChild(ctx, sys, sup, "dyn")
	require.ErrorIs(t, err, ErrChildRunning)
	require.ErrorIs(t, DeleteChild(ctx, sys, sup, "dyn"), ErrChildRunning)

	// TerminateChild stops it and keeps the spec; it stays stopped.
	require.NoError(t, TerminateChild(ctx, sys, sup, "dyn"))
	require.Equal(t, []string{"dyn:stopping", "dyn:stopped"}, only(rec.since(0), "dyn:stopping", "dyn:stopped"))
	require.True(t, pids(t, sys, sup)["dyn"].IsZero())
	_, ok := sys.Lookup("dyn")
	require.False(t, ok)
	require.NoError(t, TerminateChild(ctx, sys, sup, "dyn"), "terminating a stopped child is a no-op")

	// Stopped, the ID is still taken.
	_, err = StartChild(ctx, sys, sup, dyn)
	require.ErrorIs(t, err, ErrIDTaken)

	// RestartChild starts it again, as a restart of the old instance.
	again, err := RestartChild(ctx, sys, sup, "dyn")
	require.NoError(t, err)
	require.NotEqual(t, pid, again)
	r := recv(t, restarts)
	require.Equal(t, actor.Restarting{Previous: pid, Reason: nil, Count: 1}, r)
	named, _ := sys.Lookup("dyn")
	require.Equal(t, again, named)

	// Delete after terminate removes the spec; the ID is free again.
	require.NoError(t, TerminateChild(ctx, sys, sup, "dyn"))
	require.NoError(t, DeleteChild(ctx, sys, sup, "dyn"))
	require.Equal(t, []string{"a"}, ids(t, sys, sup))
	_, err = StartChild(ctx, sys, sup, dyn)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "dyn"}, ids(t, sys, sup))
}

func TestDynamicUnknownChild(t *testing.T) {
	sys := newSystem(t)
	ctx := ctxT(t)
	sup, err := Start(sys, Spec{})
	require.NoError(t, err)

	err = TerminateChild(ctx, sys, sup, "nope")
	require.ErrorIs(t, err, ErrUnknownChild)
	require.ErrorContains(t, err, `terminate child "nope"`)
	_, err = RestartChild(ctx, sys, sup, "nope")
	require.ErrorIs(t, err, ErrUnknownChild)
	require.ErrorIs(t, DeleteChild(ctx, sys, sup, "nope"), ErrUnknownChild)
	kids, err := WhichChildren(ctx, sys, sup)
	require.NoError(t, err)
	require.Empty(t, kids)
}

func TestDynamicStartChildErrors(t *testing.T) {
	sys := newSystem(t)
	ctx := ctxT(t)
	rec := &recorder{}
	sup, err := Start(sys, Spec{})
	require.NoError(t, err)

	_, err = StartChild(ctx, sys, sup, ChildSpec{ID: "x"})
	var se *SpecError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "ChildSpec.Props", se.Field)

	bad := ChildSpec{ID: "bad", Props: worker{id: "bad", rec: rec, failStart: func() bool { return true }}.props()}
	_, err = StartChild(ctx, sys, sup, bad)
	var st *StartError
	require.ErrorAs(t, err, &st)
	require.Equal(t, "bad", st.Child)
	var pe *actor.PanicError
	require.ErrorAs(t, err, &pe)
	require.Empty(t, ids(t, sys, sup), "a child that failed to start is not added")

	// A name held by another actor.
	_, err = sys.SpawnNamed(worker{id: "squatter", rec: rec}.props(), "taken")
	require.NoError(t, err)
	_, err = StartChild(ctx, sys, sup, ChildSpec{ID: "n", Name: "taken", Props: worker{id: "n", rec: rec}.props()})
	require.ErrorIs(t, err, actor.ErrNameTaken)
	require.ErrorAs(t, err, &st)
}

func TestDynamicTemporaryTerminatedIsRemoved(t *testing.T) {
	sys := newSystem(t)
	ctx := ctxT(t)
	sup, err := Start(sys, Spec{})
	require.NoError(t, err)
	tmp := workerSpec(&recorder{}, "job")
	tmp.Restart = Temporary
	_, err = StartChild(ctx, sys, sup, tmp)
	require.NoError(t, err)
	require.NoError(t, TerminateChild(ctx, sys, sup, "job"))
	require.Empty(t, ids(t, sys, sup))
}

func TestDynamicAPINeedsALocalSupervisor(t *testing.T) {
	sys := newSystem(t)
	ctx := ctxT(t)
	_, err := WhichChildren(ctx, sys, actor.PID{Node: "elsewhere", Incarnation: 1, ID: 1})
	require.ErrorIs(t, err, ErrNotSupervisor)

	echo, err := sys.SpawnFunc(func(c *actor.Context) { c.Respond("hi") })
	require.NoError(t, err)
	_, err = WhichChildren(ctx, sys, echo)
	require.ErrorIs(t, err, ErrNotSupervisor)

	gone, err := Start(sys, Spec{})
	require.NoError(t, err)
	require.NoError(t, sys.StopActorWait(ctx, gone))
	_, err = WhichChildren(ctx, sys, gone)
	require.ErrorIs(t, err, actor.ErrNoProcess)

	short, cancel := context.WithCancel(ctx)
	cancel()
	_, err = WhichChildren(short, sys, echo)
	require.True(t, errors.Is(err, context.Canceled), "ctx is honoured: %v", err)
}
