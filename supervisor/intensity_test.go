package supervisor

import (
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

func TestIntensityExceededStopsChildrenInReverseAndEnds(t *testing.T) {
	sys, logs := newLoggedSystem(t)
	rec := &recorder{}
	sup, err := Start(sys, Spec{Intensity: 2, Period: time.Hour, Children: []ChildSpec{
		workerSpec(rec, "a"), workerSpec(rec, "b"), workerSpec(rec, "c"), workerSpec(rec, "d"), workerSpec(rec, "e"),
	}})
	require.NoError(t, err)
	down := watch(t, sys, sup)

	b := pids(t, sys, sup)["b"]
	first := b
	for range 2 {
		sys.Send(b, "crash")
		b = waitRestarted(t, sys, sup, "b", b)
	}
	mark := rec.len()
	sys.Send(b, "crash")

	term := recvTerminated(t, down)
	var ie *IntensityError
	require.ErrorAs(t, term.Reason, &ie)
	require.Equal(t, sup, ie.Supervisor)
	require.Equal(t, "b", ie.Child)
	require.Equal(t, b, ie.ChildPID)
	require.Equal(t, 3, ie.Restarts)
	require.Equal(t, 2, ie.Intensity)
	require.Equal(t, time.Hour, ie.Period)
	var pe *actor.PanicError
	require.ErrorAs(t, term.Reason, &pe, "IntensityError wraps the last reason")
	require.Contains(t, ie.Error(), `child "b"`)
	require.Contains(t, ie.Error(), "b crashed")

	require.Equal(t, []string{
		"b:stopped",
		"e:stopping", "e:stopped", "d:stopping", "d:stopped", "c:stopping", "c:stopped", "a:stopping", "a:stopped",
	}, rec.since(mark), "the rest stopped one at a time in reverse start order, nothing restarted")
	require.Zero(t, sys.NumActors()-1, "only the watcher is left")

	out := logs.String()
	restarted := lineWith(out, "previous="+first.String())
	require.Contains(t, restarted, `msg="supervisor: restarted child"`)
	require.Contains(t, restarted, "pid="+sup.String(), "the supervisor's own PID")
	require.Contains(t, restarted, "child=b")
	require.Contains(t, restarted, "child_pid=")
	require.Contains(t, restarted, "b crashed", "the reason")
	giveUp := lineWith(out, "giving up")
	require.Contains(t, giveUp, "child=b")
	require.Contains(t, giveUp, "child_pid="+b.String())
	require.Contains(t, giveUp, "b crashed")
}

func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

func TestIntensityWindowSlides(t *testing.T) {
	sys := newSystem(t)
	clock := &fakeClock{t: time.Unix(1000, 0)}
	sup, err := Start(sys, Spec{Intensity: 1, Period: 10 * time.Second, now: clock.now, Children: []ChildSpec{
		workerSpec(&recorder{}, "w"),
	}})
	require.NoError(t, err)
	down := watch(t, sys, sup)

	w := pids(t, sys, sup)["w"]
	sys.Send(w, "crash")
	w = waitRestarted(t, sys, sup, "w", w)

	clock.advance(11 * time.Second) // the first restart leaves the window
	sys.Send(w, "crash")
	w = waitRestarted(t, sys, sup, "w", w)

	sys.Send(w, "crash") // two within 10s: more than 1
	var ie *IntensityError
	require.ErrorAs(t, recvTerminated(t, down).Reason, &ie)
	require.Equal(t, 2, ie.Restarts)
}

func TestDefaultIntensityIsThree(t *testing.T) {
	sys := newSystem(t)
	sup, err := Start(sys, Spec{Children: []ChildSpec{workerSpec(&recorder{}, "w")}})
	require.NoError(t, err)
	down := watch(t, sys, sup)
	w := pids(t, sys, sup)["w"]
	for range DefaultIntensity {
		sys.Send(w, "crash")
		w = waitRestarted(t, sys, sup, "w", w)
	}
	sys.Send(w, "crash")
	var ie *IntensityError
	require.ErrorAs(t, recvTerminated(t, down).Reason, &ie)
	require.Equal(t, DefaultIntensity, ie.Intensity)
	require.Equal(t, DefaultPeriod, ie.Period)
}
