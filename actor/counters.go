package actor

import (
	"errors"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/internal/actorstats"
)

// counters are the System's lifetime counters for the read side
// (actorhooks.Counters): each is bumped where the event happens, spawns
// and crashes and dead letters, never per message delivered.
type counters struct {
	spawns, crashes atomic.Uint64
	droppedConts    atomic.Uint64 // continuations of ended actors (async.go)
	dead            [actorstats.DeadReasons]atomic.Uint64
}

// deadReason classifies a dead letter's reason into a bounded set.
func deadReason(err error) int {
	switch {
	case errors.Is(err, ErrNoProcess):
		return actorstats.DeadNoProcess
	case errors.Is(err, ErrMailboxFull):
		return actorstats.DeadMailboxFull
	case errors.Is(err, ErrUnreachable), errors.Is(err, ErrNodeDown), errors.Is(err, ErrNotSent):
		return actorstats.DeadUnreachable
	case errors.Is(err, ErrStopped):
		return actorstats.DeadStopped
	}
	return actorstats.DeadOther
}

func (s *System) lifetimeCounters() actorstats.Counters {
	c := actorstats.Counters{Spawns: s.counters.spawns.Load(), Crashes: s.counters.crashes.Load()}
	for i := range c.DeadLetters {
		c.DeadLetters[i] = s.counters.dead[i].Load()
	}
	return c
}
