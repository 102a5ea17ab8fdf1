package actor_test

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/mailroom-go/mailroom/mailroomtest"
	"github.com/mailroom-go/mailroom/supervisor"
	"github.com/stretchr/testify/require"
)

// A supervisor's restart is a new instance: the old one's timers end
// with it, and none of them reaches the new one or anyone else.
func TestRestartStopsTheOldInstancesTimers(t *testing.T) {
	clk := mailroomtest.NewFakeClock()
	sys, err := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger(), Clock: clk})
	require.NoError(t, err)
	defer func() { require.NoError(t, sys.Stop(context.Background())) }()

	type tick struct {
		from actor.PID
		what string
	}
	ticks := make(chan tick, 100)
	started := make(chan actor.PID, 10)
	worker := actor.PropsFromFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			c.SendEvery(10*time.Millisecond, "every")
			c.StartTimer("once", 25*time.Millisecond, "once")
			c.SetReceiveTimeout(20 * time.Millisecond)
			started <- c.Self()
		case actor.ReceiveTimeout:
			ticks <- tick{c.Self(), "timeout"}
		case string:
			switch m {
			case "crash":
				panic("crash")
			case "sync":
				c.Respond("synced")
			default:
				ticks <- tick{c.Self(), m}
			}
		}
	})
	_, err = supervisor.Start(sys, supervisor.Spec{Children: []supervisor.ChildSpec{{ID: "w", Props: worker}}})
	require.NoError(t, err)
	first := <-started
	require.Equal(t, 3, actor.PendingTimers(sys))
	clk.Advance(10 * time.Millisecond)
	require.Equal(t, tick{first, "every"}, <-ticks)

	sys.Send(first, "crash") // at 10 ms
	second := <-started
	require.NotEqual(t, first, second)
	require.Equal(t, 3, actor.PendingTimers(sys), "only the new instance's timers are left")

	// The old instance's timers would fire at 20 (every, timeout) and 25
	// (once); the new one's fire at 20 (every), 30 (every, timeout), 35
	// (once).
	for range 25 {
		clk.Advance(time.Millisecond)
		_, err := sys.Request(context.Background(), second, "sync")
		require.NoError(t, err)
	}
	var got []tick
	for len(ticks) > 0 {
		got = append(got, <-ticks)
	}
	for _, tk := range got {
		require.Equal(t, second, tk.from, "a timer of the old instance delivered %q", tk.what)
	}
	require.Contains(t, got, tick{second, "once"})
	require.Zero(t, sys.DeadLetters(), "the old instance's timers make no dead letters either")
	testutil.Eventually(t, "nothing else pending", func() bool { return actor.PendingTimers(sys) == 2 })
}
