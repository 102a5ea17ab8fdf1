package supervisor

import (
	"errors"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

// TestATopLevelSupervisorGivingUpLeavesTheNodeRunning: what the package
// doc's "When a top-level supervisor gives up" says: the supervisor ends
// with an *IntensityError seen by its watchers, its children are gone
// and their names free (a request to one is ErrNoProcess, not executed),
// it leaves Trees, nothing starts it again, and the node itself keeps
// running (it is not stopped and still spawns).
func TestATopLevelSupervisorGivingUpLeavesTheNodeRunning(t *testing.T) {
	sys, _ := newLoggedSystem(t)
	rec := &recorder{}
	db := workerSpec(rec, "db")
	db.Name = "db"
	sup, err := Start(sys, Spec{Intensity: 1, Period: time.Hour, Children: []ChildSpec{db}})
	require.NoError(t, err)
	down := watch(t, sys, sup)
	require.Len(t, Trees(ctxT(t), sys), 1)

	pid := pids(t, sys, sup)["db"]
	sys.Send(pid, "crash")
	pid = waitRestarted(t, sys, sup, "db", pid)
	sys.Send(pid, "crash")

	term := recvTerminated(t, down)
	var ie *IntensityError
	require.ErrorAs(t, term.Reason, &ie, "watchers are told why")
	_, err = sys.RequestNamed(ctxT(t), "", "db", "ping")
	require.ErrorIs(t, err, actor.ErrNoProcess, "the child's name is free")
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	require.Empty(t, Trees(ctxT(t), sys), "the tree is gone, not restarted")
	select {
	case <-sys.Done():
		t.Fatal("the node stopped with its supervisor")
	default:
	}
	again, err := Start(sys, Spec{Children: []ChildSpec{db}})
	require.NoError(t, err, "the node still runs: the tree can be started again")
	require.NotEqual(t, sup, again)
	require.False(t, errors.Is(term.Reason, actor.ErrStopped))
}
