package supervisor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

// lookup returns the PID registered as name, polling until it differs
// from old.
func lookupNew(t *testing.T, sys *actor.System, name string, old actor.PID) actor.PID {
	t.Helper()
	var pid actor.PID
	eventually(t, name+" registered anew", func() bool {
		var ok bool
		pid, ok = sys.Lookup(name)
		return ok && pid != old
	})
	return pid
}

func TestEscalationThroughNestedTree(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	w := workerSpec(rec, "w")
	w.Name = "w"
	inner := Nested("inner", Spec{Intensity: 1, Period: time.Hour, Children: []ChildSpec{w}})
	outer, err := Start(sys, Spec{Intensity: 1, Period: time.Hour, Children: []ChildSpec{workerSpec(rec, "x"), inner}})
	require.NoError(t, err)
	down := watch(t, sys, outer)

	kids, err := WhichChildren(ctxT(t), sys, outer)
	require.NoError(t, err)
	require.Equal(t, ChildInfo{ID: "inner", PID: kids[1].PID, Restart: Permanent, IsSupervisor: true}, kids[1])
	innerPID, x := kids[1].PID, kids[0].PID

	// Two crashes of w: the inner supervisor restarts it once, then gives
	// up; the outer one restarts it, and w comes back with it.
	wPID, _ := sys.Lookup("w")
	sys.Send(wPID, "crash")
	wPID = lookupNew(t, sys, "w", wPID)
	sys.Send(wPID, "crash")
	newInner := waitRestarted(t, sys, outer, "inner", innerPID)
	wPID = lookupNew(t, sys, "w", wPID)
	require.Equal(t, pids(t, sys, newInner)["w"], wPID, "w runs under the new inner supervisor")
	require.Equal(t, x, pids(t, sys, outer)["x"], "one-for-one: x untouched")

	// The same again: the outer supervisor's second restart within the
	// hour is one too many.
	sys.Send(wPID, "crash")
	wPID = lookupNew(t, sys, "w", wPID)
	sys.Send(wPID, "crash")

	term := recvTerminated(t, down)
	var outerErr *IntensityError
	require.ErrorAs(t, term.Reason, &outerErr)
	require.Equal(t, "inner", outerErr.Child)
	require.Equal(t, outer, outerErr.Supervisor)
	innerErr, ok := outerErr.Reason.(*IntensityError)
	require.True(t, ok, "the inner supervisor's give-up is the reason: %v", outerErr.Reason)
	require.Equal(t, "w", innerErr.Child)
	require.Equal(t, newInner, innerErr.Supervisor)
	var pe *actor.PanicError
	require.ErrorAs(t, term.Reason, &pe, "the chain ends at w's crash")
	require.Equal(t, "x:stopped", rec.since(0)[rec.len()-1], "x stopped last: outer stops in reverse order")
	_, ok = sys.Lookup("w")
	require.False(t, ok)
}

func TestShutdownReverseOrderDepthFirst(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	sup, err := Start(sys, Spec{Children: []ChildSpec{
		workerSpec(rec, "a"),
		Nested("inner", Spec{Children: []ChildSpec{workerSpec(rec, "b1"), workerSpec(rec, "b2")}}),
		workerSpec(rec, "c"),
	}})
	require.NoError(t, err)
	require.Equal(t, []string{"a:started", "b1:started", "b2:started", "c:started"}, rec.since(0))
	mark := rec.len()

	require.NoError(t, sys.StopActorWait(ctxT(t), sup))
	require.Equal(t, []string{
		"c:stopping", "c:stopped",
		"b2:stopping", "b2:stopped", "b1:stopping", "b1:stopped",
		"a:stopping", "a:stopped",
	}, rec.since(mark))
	require.Zero(t, sys.NumActors())
}

func TestSystemStopStopsTreeInOrder(t *testing.T) {
	sys, err := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	rec := &recorder{}
	_, err = Start(sys, Spec{Children: []ChildSpec{workerSpec(rec, "a"), workerSpec(rec, "b")}})
	require.NoError(t, err)
	mark := rec.len()
	require.NoError(t, sys.Stop(ctxT(t)))
	require.Equal(t, []string{"b:stopping", "b:stopped", "a:stopping", "a:stopped"}, rec.since(mark))
}

func TestShutdownBoundExceededLogsAndMovesOn(t *testing.T) {
	sys, logs := newLoggedSystem(t)
	rec := &recorder{}
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release) // runs before the system stops, even on failure
	sup, err := Start(sys, Spec{Children: []ChildSpec{
		workerSpec(rec, "a"),
		{ID: "slow", Props: worker{id: "slow", rec: rec, stopGate: gate}.props(), Shutdown: 20 * time.Millisecond},
	}})
	require.NoError(t, err)
	mark := rec.len()

	stopped := make(chan error, 1)
	go func() { stopped <- sys.StopActorWait(context.Background(), sup) }()

	eventually(t, "a stopped while slow hangs", func() bool {
		return len(only(rec.since(mark), "a:stopped")) == 1
	})
	require.NotContains(t, rec.since(mark), "slow:stopping", "slow is still in its Stopping")
	warn := lineWith(logs.String(), "did not stop")
	require.Contains(t, warn, "child=slow")
	require.Contains(t, warn, "shutdown=20ms")
	select {
	case err := <-stopped:
		t.Fatalf("supervisor gone before its slow child: %v", err)
	default:
	}

	release()
	require.NoError(t, recv(t, stopped))
	require.Equal(t, []string{"a:stopping", "a:stopped", "slow:stopping", "slow:stopped"}, rec.since(mark))
}

func TestRegisteredNameReRegisteredAfterRestart(t *testing.T) {
	sys := newSystem(t)
	cache := workerSpec(&recorder{}, "cache")
	cache.Name = "cache"
	sup, err := Start(sys, Spec{Children: []ChildSpec{cache}})
	require.NoError(t, err)

	old, ok := sys.Lookup("cache")
	require.True(t, ok)
	require.Equal(t, pids(t, sys, sup)["cache"], old)

	sys.SendNamed("", "cache", "crash")
	now := waitRestarted(t, sys, sup, "cache", old)
	got, ok := sys.Lookup("cache")
	require.True(t, ok)
	require.Equal(t, now, got)
}
