package supervisor

import (
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

func TestPermanentRestartedAfterNormalStopAndCrash(t *testing.T) {
	for _, how := range []string{"exit", "crash", "fail"} {
		t.Run(how, func(t *testing.T) {
			sys := newSystem(t)
			restarts := make(chan actor.Restarting, 1)
			sup, err := Start(sys, Spec{Children: []ChildSpec{
				{ID: "p", Props: worker{id: "p", rec: &recorder{}, restarts: restarts}.props()},
			}})
			require.NoError(t, err)
			old := pids(t, sys, sup)["p"]

			sys.Send(old, how)
			r := recv(t, restarts)
			require.Equal(t, old, r.Previous)
			if how == "exit" {
				require.NoError(t, r.Reason, "a normal stop has no reason")
			} else {
				require.Error(t, r.Reason)
			}
			waitRestarted(t, sys, sup, "p", old)
		})
	}
}

func TestTransientRestartedOnlyAfterAbnormalEnd(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	tr := workerSpec(rec, "tr")
	tr.Restart = Transient
	sup, err := Start(sys, Spec{Children: []ChildSpec{tr}})
	require.NoError(t, err)

	old := pids(t, sys, sup)["tr"]
	sys.Send(old, "crash")
	cur := waitRestarted(t, sys, sup, "tr", old)

	sys.Send(cur, "fail")
	cur = waitRestarted(t, sys, sup, "tr", cur)

	mark := rec.len()
	sys.Send(cur, "exit")
	eventually(t, "transient child stopped", func() bool { return pids(t, sys, sup)["tr"].IsZero() })
	kids, err := WhichChildren(ctxT(t), sys, sup)
	require.NoError(t, err)
	require.Equal(t, []ChildInfo{{ID: "tr", Restart: Transient, Restarts: 2}}, kids, "kept, not running, not restarted")
	require.Equal(t, []string{"tr:stopping", "tr:stopped"}, rec.since(mark), "no restart after a normal stop")
}

func TestTemporaryNeverRestartedRemovedAndNotCounted(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	t1, t2 := workerSpec(rec, "t1"), workerSpec(rec, "t2")
	t1.Restart, t2.Restart = Temporary, Temporary
	sup, err := Start(sys, Spec{Intensity: 1, Period: time.Hour, Children: []ChildSpec{t1, t2, workerSpec(rec, "p")}})
	require.NoError(t, err)
	down := watch(t, sys, sup)
	before := pids(t, sys, sup)

	sys.Send(before["t1"], "crash")
	sys.Send(before["t2"], "exit")
	eventually(t, "temporary children removed", func() bool { return len(ids(t, sys, sup)) == 1 })
	require.Equal(t, []string{"p"}, ids(t, sys, sup))

	// Intensity 1: one restart is allowed; had the temporaries counted,
	// this would be the third and the supervisor would give up.
	sys.Send(before["p"], "crash")
	waitRestarted(t, sys, sup, "p", before["p"])
	select {
	case m := <-down:
		t.Fatalf("supervisor ended: %v", m.Reason)
	default:
	}
	require.Equal(t, []string{"t1:started", "t2:started"}, only(rec.since(0), "t1:restarting", "t2:restarting", "t1:started", "t2:started"),
		"temporaries started once, never again")
}
