package supervisor

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

// startABC starts a supervisor with workers a, b, c under strategy.
func startABC(t *testing.T, strategy Strategy) (*actor.System, *recorder, actor.PID) {
	t.Helper()
	sys := newSystem(t)
	rec := &recorder{}
	sup, err := Start(sys, Spec{Strategy: strategy, Children: []ChildSpec{
		workerSpec(rec, "a"), workerSpec(rec, "b"), workerSpec(rec, "c"),
	}})
	require.NoError(t, err)
	require.Equal(t, []string{"a:started", "b:started", "c:started"}, rec.since(0), "children start in list order")
	return sys, rec, sup
}

func TestOneForOneRestartsOnlyTheFailedChild(t *testing.T) {
	sys, rec, sup := startABC(t, OneForOne)
	before := pids(t, sys, sup)
	mark := rec.len()

	sys.Send(before["b"], "crash")
	waitRestarted(t, sys, sup, "b", before["b"])

	after := pids(t, sys, sup)
	require.Equal(t, before["a"], after["a"], "a untouched")
	require.Equal(t, before["c"], after["c"], "c untouched")
	require.Equal(t, []string{"b:stopped", "b:restarting", "b:started"}, rec.since(mark))
}

func TestOneForAllStopsOthersInReverseThenRestartsAllInOrder(t *testing.T) {
	sys, rec, sup := startABC(t, OneForAll)
	before := pids(t, sys, sup)
	mark := rec.len()

	sys.Send(before["b"], "crash")
	eventually(t, "all three restarted", func() bool {
		after := pids(t, sys, sup)
		for id, old := range before {
			if after[id].IsZero() || after[id] == old {
				return false
			}
		}
		return true
	})
	require.Equal(t, []string{
		"b:stopped",                                          // the crash
		"c:stopping", "c:stopped", "a:stopping", "a:stopped", // reverse start order
		"a:restarting", "a:started", "b:restarting", "b:started", "c:restarting", "c:started",
	}, rec.since(mark))
}

func TestRestForOneRestartsTheFailedChildAndLaterOnes(t *testing.T) {
	sys, rec, sup := startABC(t, RestForOne)
	before := pids(t, sys, sup)
	mark := rec.len()

	sys.Send(before["b"], "crash")
	waitRestarted(t, sys, sup, "b", before["b"])
	after := waitRestarted(t, sys, sup, "c", before["c"])

	require.Equal(t, before["a"], pids(t, sys, sup)["a"], "a was started before b: untouched")
	require.NotEqual(t, before["c"], after)
	require.Equal(t, []string{
		"b:stopped",
		"c:stopping", "c:stopped",
		"b:restarting", "b:started", "c:restarting", "c:started",
	}, rec.since(mark))
}

func TestRestForOneLastChildIsLikeOneForOne(t *testing.T) {
	sys, rec, sup := startABC(t, RestForOne)
	before := pids(t, sys, sup)
	mark := rec.len()

	sys.Send(before["c"], "crash")
	waitRestarted(t, sys, sup, "c", before["c"])
	after := pids(t, sys, sup)
	require.Equal(t, before["a"], after["a"])
	require.Equal(t, before["b"], after["b"])
	require.Equal(t, []string{"c:stopped", "c:restarting", "c:started"}, rec.since(mark))
}

func TestSiblingsReceiveRestartingWithSiblingError(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	aRestarts := make(chan actor.Restarting, 1)
	bRestarts := make(chan actor.Restarting, 1)
	sup, err := Start(sys, Spec{Strategy: OneForAll, Children: []ChildSpec{
		{ID: "a", Props: worker{id: "a", rec: rec, restarts: aRestarts}.props()},
		{ID: "b", Props: worker{id: "b", rec: rec, restarts: bRestarts}.props()},
	}})
	require.NoError(t, err)
	before := pids(t, sys, sup)

	sys.Send(before["b"], "crash")
	ra := recv(t, aRestarts)
	rb := recv(t, bRestarts)

	require.Equal(t, before["b"], rb.Previous)
	var pe *actor.PanicError
	require.ErrorAs(t, rb.Reason, &pe, "the failed child learns it crashed")
	require.Equal(t, 1, rb.Count)

	require.Equal(t, before["a"], ra.Previous)
	var se *SiblingError
	require.ErrorAs(t, ra.Reason, &se, "the sibling learns why it was restarted")
	require.Equal(t, "b", se.Child)
	require.ErrorAs(t, se.Reason, &pe)
	require.Equal(t, 1, ra.Count)
}

func TestGroupRestartLeavesStoppedChildrenStoppedAndRemovesTemporary(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	tmp := workerSpec(rec, "tmp")
	tmp.Restart = Temporary
	sup, err := Start(sys, Spec{Strategy: OneForAll, Children: []ChildSpec{
		workerSpec(rec, "off"), tmp, workerSpec(rec, "b"),
	}})
	require.NoError(t, err)
	ctx := ctxT(t)
	require.NoError(t, TerminateChild(ctx, sys, sup, "off"))
	before := pids(t, sys, sup)
	require.True(t, before["off"].IsZero())

	sys.Send(before["b"], "crash")
	waitRestarted(t, sys, sup, "b", before["b"])

	require.Equal(t, []string{"off", "b"}, ids(t, sys, sup), "the temporary sibling is removed")
	require.True(t, pids(t, sys, sup)["off"].IsZero(), "a terminated child stays stopped through a group restart")
}

func TestFailedRestartCountsAndIsRetried(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	var attempts atomic.Int32
	w := worker{id: "w", rec: rec, failStart: func() bool {
		n := attempts.Add(1)
		return n == 2 || n == 3 // the first start succeeds, the first two restarts fail
	}}
	sup, err := Start(sys, Spec{Intensity: 3, Period: time.Hour, Children: []ChildSpec{{ID: "w", Props: w.props()}}})
	require.NoError(t, err)
	old := pids(t, sys, sup)["w"]

	sys.Send(old, "crash")
	waitRestarted(t, sys, sup, "w", old)
	require.Equal(t, int32(4), attempts.Load(), "two failed restarts retried, then success: 1 crash + 2 failures = 3 restarts, within intensity 3")
	kids, err := WhichChildren(ctxT(t), sys, sup)
	require.NoError(t, err)
	require.Equal(t, 1, kids[0].Restarts)
}

func TestRestartThatNeverStartsExceedsIntensity(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	var attempts atomic.Int32
	w := worker{id: "w", rec: rec, failStart: func() bool { return attempts.Add(1) > 1 }}
	sup, err := Start(sys, Spec{Intensity: 3, Period: time.Hour, Children: []ChildSpec{{ID: "w", Props: w.props()}}})
	require.NoError(t, err)
	down := watch(t, sys, sup)
	old := pids(t, sys, sup)["w"]

	sys.Send(old, "crash")
	term := recvTerminated(t, down)
	var ie *IntensityError
	require.ErrorAs(t, term.Reason, &ie)
	require.Equal(t, "w", ie.Child)
	require.Equal(t, 4, ie.Restarts, "the crash and three failed restarts")
	var pe *actor.PanicError
	require.ErrorAs(t, ie.Reason, &pe, "the last reason is the failed restart")
	require.Contains(t, pe.Error(), "w cannot start")
	require.Equal(t, int32(4), attempts.Load(), "the first start and three restarts")
}
