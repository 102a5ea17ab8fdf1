package router_test

import (
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/router"
	"github.com/mailroom-go/mailroom/supervisor"
	"github.com/stretchr/testify/require"
)

// A pool's routee that crashes is removed at once and restarted by the
// pool's supervisor, then routed to again; Resize grows and shrinks the
// set; Close stops every routee.
func TestPoolRestartsARouteeThatCrashes(t *testing.T) {
	sys := newSystem(t)
	props := actor.PropsFromFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case string:
			if m == "crash" {
				panic("asked to crash")
			}
			c.Respond(c.Self())
		}
	})
	p, err := router.NewPool(sys, router.Config{Kind: router.RoundRobin}, router.PoolSpec{
		Size:   3,
		Routee: supervisor.ChildSpec{Props: props},
	})
	require.NoError(t, err)
	require.Len(t, p.Routees(), 3)
	before := map[actor.PID]bool{}
	for _, r := range p.Routees() {
		before[r.PID] = true
	}

	victim := p.Routees()[0].PID
	sys.Send(victim, "crash")
	eventually(t, 10*time.Second, "the crashed routee replaced", func() bool {
		rs := p.Routees()
		if len(rs) != 3 {
			return false
		}
		for _, r := range rs {
			if r.PID == victim {
				return false
			}
		}
		return true
	})
	// Every routee answers, the restarted one among them.
	answered := map[actor.PID]bool{}
	for range 30 {
		v, err := p.Request(ctxT(t, 5*time.Second), sys, "who")
		require.NoError(t, err)
		answered[v.(actor.PID)] = true
	}
	require.Len(t, answered, 3)
	fresh := 0
	for pid := range answered {
		if !before[pid] {
			fresh++
		}
	}
	require.Equal(t, 1, fresh, "one routee is the restarted instance")

	require.NoError(t, p.Resize(ctxT(t, 5*time.Second), 5))
	require.Len(t, p.Routees(), 5)
	require.NoError(t, p.Resize(ctxT(t, 5*time.Second), 2))
	require.Len(t, p.Routees(), 2)
	live := p.Routees()
	require.NoError(t, p.Close(ctxT(t, 5*time.Second)))
	for _, r := range live {
		_, err := sys.Request(ctxT(t, 5*time.Second), r.PID, "who")
		require.ErrorIs(t, err, actor.ErrNoProcess, "a closed pool's routee is stopped")
	}
}
