package actorhooks_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/actorstats"
	"github.com/stretchr/testify/require"
)

// TestCounters: spawns, crashes and dead letters by reason are counted
// where they happen.
func TestCounters(t *testing.T) {
	sys := start(t)
	c0 := actorhooks.Counters(sys)

	crashed := make(chan struct{})
	pid, err := sys.SpawnFunc(func(c *actor.Context) {
		if c.Message() == "crash" {
			defer close(crashed)
			panic("on purpose")
		}
	})
	require.NoError(t, err)
	_, err = sys.SpawnNamed(actor.PropsFromFunc(func(*actor.Context) {}), "named")
	require.NoError(t, err)
	_, err = sys.SpawnNamed(actor.PropsFromFunc(func(*actor.Context) {}), "named")
	require.ErrorIs(t, err, actor.ErrNameTaken) // not a spawn
	sys.Send(pid, "crash")
	<-crashed
	eventually(t, "the crash counted", func() bool { return actorhooks.Counters(sys).Crashes == c0.Crashes+1 })

	// The crashed actor is gone: a send to it is a dead letter (no
	// process); a transport's drops are classified by their reason.
	eventually(t, "the crashed actor gone", func() bool { return sys.MailboxLen(pid) < 0 })
	sys.Send(pid, "late")
	actorhooks.DeadLetter(sys, pid, actor.PID{}, "x", fmt.Errorf("link closed: %w", actor.ErrUnreachable))
	actorhooks.DeadLetter(sys, pid, actor.PID{}, "x", actor.ErrNodeDown)
	actorhooks.DeadLetter(sys, pid, actor.PID{}, "x", actor.ErrMailboxFull)
	actorhooks.DeadLetter(sys, pid, actor.PID{}, "x", actor.ErrStopped)
	actorhooks.DeadLetter(sys, pid, actor.PID{}, "x", errors.New("something else"))

	c := actorhooks.Counters(sys)
	require.Equal(t, c0.Spawns+2, c.Spawns)
	require.Equal(t, c0.Crashes+1, c.Crashes)
	var d [actorstats.DeadReasons]uint64
	for i := range d {
		d[i] = c.DeadLetters[i] - c0.DeadLetters[i]
	}
	require.Equal(t, uint64(1), d[actorstats.DeadNoProcess])
	require.Equal(t, uint64(2), d[actorstats.DeadUnreachable])
	require.Equal(t, uint64(1), d[actorstats.DeadMailboxFull])
	require.Equal(t, uint64(1), d[actorstats.DeadStopped])
	require.Equal(t, uint64(1), d[actorstats.DeadOther])
	var sum uint64
	for _, n := range c.DeadLetters {
		sum += n
	}
	require.Equal(t, sys.DeadLetters(), sum, "every dead letter has one reason")
}
