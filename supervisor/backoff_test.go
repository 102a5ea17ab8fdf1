package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/mailroomtest"
	"github.com/stretchr/testify/require"
)

// The n-th delay doubles from Min up to Max, and Jitter takes at most its
// part of it away.
func TestBackoffDelayDoublesToItsCap(t *testing.T) {
	b := &Backoff{Min: 10 * time.Millisecond, Max: 80 * time.Millisecond}
	for n, want := range map[int]time.Duration{1: 10, 2: 20, 3: 40, 4: 80, 5: 80, 1000: 80} {
		require.Equal(t, want*time.Millisecond, b.delay(n, 0.9), "restart %d", n)
	}
	require.Equal(t, 320*time.Millisecond, (&Backoff{Min: 10 * time.Millisecond}).delay(99, 0), "Max 0 is 32 x Min")
	j := &Backoff{Min: 100 * time.Millisecond, Jitter: 0.25}
	require.Equal(t, 100*time.Millisecond, j.delay(1, 0))
	require.Equal(t, 87500*time.Microsecond, j.delay(1, 0.5))
	require.Greater(t, j.delay(1, 0.99999999), 75*time.Millisecond-time.Microsecond)
	for _, bad := range []*Backoff{{}, {Min: 2, Max: 1}, {Min: 1, Jitter: 1.5}, {Min: 1, Jitter: -0.1}, {Min: 1, ResetAfter: -1}} {
		err := ChildSpec{ID: "c", Props: actor.PropsFromFunc(func(*actor.Context) {}), Backoff: bad}.Validate()
		require.ErrorContains(t, err, "ChildSpec.Backoff.", "%+v", bad)
	}
}

// A failing child's restarts wait for the backoff on the System's clock:
// Min, then twice it; a child that ran ResetAfter is restarted after Min
// again. Each failure counts toward the intensity when it happens.
func TestBackoffDelaysRestartsOnTheClock(t *testing.T) {
	clk := mailroomtest.NewFakeClock()
	sys, err := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger(), Clock: clk})
	require.NoError(t, err)
	defer func() { require.NoError(t, sys.Stop(context.Background())) }()
	probe, err := mailroomtest.NewProbe(sys)
	require.NoError(t, err)
	worker := actor.PropsFromFunc(func(c *actor.Context) {
		switch c.Message() {
		case actor.Started{}:
			c.Send(probe.PID(), "started")
		case "crash":
			panic("crash")
		}
	})
	_, err = Start(sys, Spec{Intensity: 10, Period: time.Hour, Children: []ChildSpec{{
		ID: "w", Name: "w", Props: worker,
		Backoff: &Backoff{Min: time.Second, Max: 4 * time.Second, ResetAfter: time.Minute},
	}}})
	require.NoError(t, err)
	_, err = probe.ExpectMessage("started", 5*time.Second)
	require.NoError(t, err)

	crashThenWait := func(want time.Duration) {
		t.Helper()
		sys.SendNamed("", "w", "crash")
		var next time.Time
		eventually(t, "the backoff timer", func() bool {
			at, ok := clk.Next()
			next = at
			return ok
		})
		require.Equal(t, want, next.Sub(clk.Now()))
		clk.Advance(want - time.Millisecond)
		require.NoError(t, probe.ExpectNoMessage(20*time.Millisecond), "restarted before its backoff")
		clk.Advance(time.Millisecond)
		_, err := probe.ExpectMessage("started", 5*time.Second)
		require.NoError(t, err)
	}
	crashThenWait(time.Second)
	crashThenWait(2 * time.Second)
	crashThenWait(4 * time.Second)
	crashThenWait(4 * time.Second) // the cap
	clk.Advance(time.Minute)       // ran ResetAfter
	crashThenWait(time.Second)
}

// With a backoff, the failure past the intensity still ends the
// supervisor: the failure counts when it happens.
func TestBackoffCountsInTheIntensity(t *testing.T) {
	clk := mailroomtest.NewFakeClock()
	sys, err := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger(), Clock: clk})
	require.NoError(t, err)
	defer func() { require.NoError(t, sys.Stop(context.Background())) }()
	probe, err := mailroomtest.NewProbe(sys)
	require.NoError(t, err)
	worker := actor.PropsFromFunc(func(c *actor.Context) {
		switch c.Message() {
		case actor.Started{}:
			c.Send(probe.PID(), "started")
		case "crash":
			panic("crash")
		}
	})
	sup, err := Start(sys, Spec{Intensity: 1, Period: time.Hour, Children: []ChildSpec{{
		ID: "w", Name: "w", Props: worker, Backoff: &Backoff{Min: time.Second},
	}}})
	require.NoError(t, err)
	require.NoError(t, probe.Watch(sup))
	_, err = probe.ExpectMessage("started", 5*time.Second)
	require.NoError(t, err)
	sys.SendNamed("", "w", "crash")
	eventually(t, "the backoff timer", func() bool { _, ok := clk.Next(); return ok })
	clk.Advance(time.Second)
	_, err = probe.ExpectMessage("started", 5*time.Second)
	require.NoError(t, err)
	sys.SendNamed("", "w", "crash")
	term, err := probe.ExpectTerminated(sup, 5*time.Second)
	require.NoError(t, err)
	var ie *IntensityError
	require.ErrorAs(t, term.Reason, &ie)
	require.Equal(t, 2, ie.Restarts)
}
