package router_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/router"
	"github.com/stretchr/testify/require"
)

func TestRoundRobinSpreadsEvenly(t *testing.T) {
	sys := newSystem(t)
	tl := newTally()
	pids := []actor.PID{tl.spawn(t, sys), tl.spawn(t, sys), tl.spawn(t, sys)}
	g, err := router.NewGroup(sys, router.Config{}, router.Of(pids[0]), router.Of(pids[1]), router.Of(pids[2]))
	require.NoError(t, err)
	defer g.Close(ctxT(t, 5*time.Second))
	for i := range 300 {
		require.NoError(t, g.Send(sys, i))
	}
	eventually(t, 10*time.Second, "300 messages arrive", func() bool { return tl.total() == 300 })
	for _, p := range pids {
		require.Equal(t, 100, tl.count(p), "routee %v", p)
	}
}

func TestNoRouteesIsAnErrorNotADrop(t *testing.T) {
	sys := newSystem(t)
	for _, k := range []router.Kind{router.RoundRobin, router.Random, router.Broadcast, router.ConsistentHash, router.SmallestMailbox, router.ScatterGatherFirst} {
		g, err := router.NewGroup(sys, router.Config{Kind: k, Key: func(any) string { return "k" }})
		require.NoError(t, err)
		err = g.Send(sys, "x")
		require.ErrorIs(t, err, router.ErrNoRoutees, k.String())
		require.Equal(t, actor.NotExecuted, actor.Outcome(err), k.String())
		_, err = g.Request(ctxT(t, time.Second), sys, "x")
		require.ErrorIs(t, err, router.ErrNoRoutees, k.String())
		require.Equal(t, actor.NotExecuted, actor.Outcome(err))
		require.Equal(t, uint64(2), g.Stats().NoRoutees)
		require.NoError(t, g.Close(ctxT(t, 5*time.Second)))
		require.ErrorIs(t, g.Send(sys, "x"), router.ErrClosed)
		require.ErrorIs(t, g.Add(router.Of(sys.NewSender().PID())), router.ErrClosed)
	}
}

func TestConfigIsValidated(t *testing.T) {
	sys := newSystem(t)
	_, err := router.NewGroup(sys, router.Config{Kind: router.ConsistentHash})
	require.ErrorContains(t, err, "Config.Key")
	_, err = router.NewGroup(sys, router.Config{Kind: router.Kind(42)})
	require.ErrorContains(t, err, "Config.Kind")
	_, err = router.NewPool(sys, router.Config{}, router.PoolSpec{Size: 0})
	require.ErrorContains(t, err, "Size")
}

func TestRandomReachesEveryRoutee(t *testing.T) {
	sys := newSystem(t)
	tl := newTally()
	pids := []actor.PID{tl.spawn(t, sys), tl.spawn(t, sys), tl.spawn(t, sys)}
	g, err := router.NewGroup(sys, router.Config{Kind: router.Random}, router.Of(pids[0]), router.Of(pids[1]), router.Of(pids[2]))
	require.NoError(t, err)
	defer g.Close(ctxT(t, 5*time.Second))
	for i := range 600 {
		require.NoError(t, g.Send(sys, i))
	}
	eventually(t, 10*time.Second, "600 messages arrive", func() bool { return tl.total() == 600 })
	for _, p := range pids {
		// Binomial(600, 1/3): mean 200, sd ~11.5; 100 is 8.7 sd away.
		require.Greater(t, tl.count(p), 100, "routee %v", p)
	}
}

func TestBroadcastGivesEveryRouteeEveryMessage(t *testing.T) {
	sys := newSystem(t)
	tl := newTally()
	pids := []actor.PID{tl.spawn(t, sys), tl.spawn(t, sys), tl.spawn(t, sys)}
	g, err := router.NewGroup(sys, router.Config{Kind: router.Broadcast}, router.Of(pids[0]), router.Of(pids[1]), router.Of(pids[2]))
	require.NoError(t, err)
	defer g.Close(ctxT(t, 5*time.Second))
	for i := range 50 {
		require.NoError(t, g.Send(sys, i))
	}
	eventually(t, 10*time.Second, "150 messages arrive", func() bool { return tl.total() == 150 })
	for _, p := range pids {
		require.Equal(t, 50, tl.count(p))
	}
	_, err = g.Request(ctxT(t, time.Second), sys, 1)
	require.ErrorIs(t, err, router.ErrBroadcastRequest)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
}

// Several senders, each its own handle, through a round-robin router:
// every routee sees each sender's numbers in the order sent.
func TestPerSenderOrderToEachRoutee(t *testing.T) {
	sys := newSystem(t)
	tl := newTally()
	pids := []actor.PID{tl.spawn(t, sys), tl.spawn(t, sys), tl.spawn(t, sys)}
	for _, k := range []router.Kind{router.RoundRobin, router.Random, router.SmallestMailbox} {
		g, err := router.NewGroup(sys, router.Config{Kind: k}, router.Of(pids[0]), router.Of(pids[1]), router.Of(pids[2]))
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 4 {
			h := sys.NewSender()
			wg.Go(func() {
				for i := range 500 {
					if err := g.Send(h, i); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		before := tl.total()
		eventually(t, 10*time.Second, "2000 messages arrive", func() bool { return tl.total() >= 2000 })
		require.Equal(t, 2000, before+(tl.total()-before))
		tl.mu.Lock()
		for routee, bySender := range tl.from {
			require.Len(t, bySender, 4, "%v: one entry per sender", routee)
			for sender, nums := range bySender {
				for i := 1; i < len(nums); i++ {
					require.Less(t, nums[i-1], nums[i], "%s: routee %v, sender %v: out of order", k, routee, sender)
				}
			}
		}
		clear(tl.from)
		clear(tl.got)
		tl.mu.Unlock()
		require.NoError(t, g.Close(ctxT(t, 5*time.Second)))
	}
}

func TestConsistentHashSameKeySameRoutee(t *testing.T) {
	sys := newSystem(t)
	tl := newTally()
	var rts []router.Routee
	for range 5 {
		rts = append(rts, router.Of(tl.spawn(t, sys)))
	}
	key := func(m any) string { return m.(string)[:2] }
	g, err := router.NewGroup(sys, router.Config{Kind: router.ConsistentHash, Key: key}, rts...)
	require.NoError(t, err)
	defer g.Close(ctxT(t, 5*time.Second))
	owner := map[string]actor.PID{}
	used := map[actor.PID]bool{}
	for i := range 2000 {
		msg := fmt.Sprintf("%02d-%d", i%50, i)
		v, err := g.Request(ctxT(t, 5*time.Second), sys, msg)
		require.NoError(t, err)
		pid := v.(actor.PID)
		if prev, ok := owner[key(msg)]; ok {
			require.Equal(t, prev, pid, "key %s moved", key(msg))
		}
		owner[key(msg)] = pid
		used[pid] = true
	}
	require.Len(t, used, 5, "50 keys over 5 routees use them all")
}

// A request through a router fails as the routee's would: a rejection
// is executed, a routee already gone (not yet removed) is not executed.
func TestRequestKeepsTheOutcome(t *testing.T) {
	sys := newSystem(t)
	rejecter, err := sys.SpawnFunc(func(c *actor.Context) {
		if _, ok := c.Message().(string); ok {
			c.RespondError(actor.Reject("nope", "refused"))
		}
	})
	require.NoError(t, err)
	g, err := router.NewGroup(sys, router.Config{}, router.Of(rejecter))
	require.NoError(t, err)
	defer g.Close(ctxT(t, 5*time.Second))
	_, err = g.Request(ctxT(t, 5*time.Second), sys, "x")
	var re *actor.RemoteError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "nope", re.Code)
	require.Equal(t, actor.Executed, actor.Outcome(err))

	// A named routee no actor holds: ErrNoProcess, not executed.
	g2, err := router.NewGroup(sys, router.Config{}, router.Named("", "nobody"))
	require.NoError(t, err)
	defer g2.Close(ctxT(t, 5*time.Second))
	_, err = g2.Request(ctxT(t, 5*time.Second), sys, "x")
	require.ErrorIs(t, err, actor.ErrNoProcess)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	require.Equal(t, []router.Routee{router.Named("local", "nobody")}, g2.Routees(), "a named routee is kept")
}

func TestGroupRemovesARouteeThatEnds(t *testing.T) {
	sys := newSystem(t)
	tl := newTally()
	a, b := tl.spawn(t, sys), tl.spawn(t, sys)
	g, err := router.NewGroup(sys, router.Config{}, router.Of(a), router.Of(b))
	require.NoError(t, err)
	defer g.Close(ctxT(t, 5*time.Second))
	require.NoError(t, sys.StopActorWait(ctxT(t, 5*time.Second), a))
	eventually(t, 5*time.Second, "the stopped routee is removed", func() bool { return len(g.Routees()) == 1 })
	require.Equal(t, []router.Routee{router.Of(b)}, g.Routees())
	require.Equal(t, uint64(1), g.Stats().Died)

	// A PID already dead when added goes as soon as its watch reports it.
	require.NoError(t, g.Add(router.Of(a)))
	eventually(t, 5*time.Second, "the dead routee added is removed", func() bool { return len(g.Routees()) == 1 })

	// Remove and Add while running.
	c := tl.spawn(t, sys)
	require.NoError(t, g.Add(router.Of(c), router.Of(c)))
	require.Len(t, g.Routees(), 2, "a routee added twice is there once")
	require.Equal(t, 1, g.Remove(router.Of(b)))
	for i := range 10 {
		require.NoError(t, g.Send(sys, i))
	}
	eventually(t, 5*time.Second, "10 messages to c", func() bool { return tl.count(c) == 10 })
	require.Equal(t, 0, tl.count(b))
	require.Equal(t, uint64(2), g.Stats().Died, "a removal by Remove is not a death")
}

// A routee with a full mailbox is passed over for an idle one.
func TestSmallestMailboxPrefersTheIdle(t *testing.T) {
	sys := newSystem(t)
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	defer release()
	busy, err := sys.SpawnFunc(func(c *actor.Context) {
		if _, ok := c.Message().(string); ok {
			<-gate
		}
	})
	require.NoError(t, err)
	tl := newTally()
	idle := tl.spawn(t, sys)
	g, err := router.NewGroup(sys, router.Config{Kind: router.SmallestMailbox}, router.Of(busy), router.Of(idle))
	require.NoError(t, err)
	defer g.Close(ctxT(t, 5*time.Second))
	// More waiting at busy than the router sends in all, so the idle
	// routee's mailbox, however far it falls behind, is always smaller.
	const blocked = 200
	for i := range blocked {
		sys.Send(busy, "block"+strconv.Itoa(i))
	}
	eventually(t, 5*time.Second, "busy has its messages waiting", func() bool { return sys.MailboxLen(busy) == blocked })
	for i := range 100 {
		require.NoError(t, g.Send(sys, i))
	}
	eventually(t, 10*time.Second, "100 at idle", func() bool { return tl.count(idle) == 100 })
	require.Equal(t, blocked, sys.MailboxLen(busy), "nothing routed to the busy routee")
	release()
}

// The first answer wins; the slower routees' requests are cancelled and
// counted; when all fail the error carries every one and the combined
// outcome.
func TestScatterGatherFirst(t *testing.T) {
	sys := newSystem(t)
	slow := func() actor.PID {
		pid, err := sys.SpawnFunc(func(c *actor.Context) {
			if _, ok := c.Message().(string); ok {
				_ = c.Defer() // answers never; the request ends when cancelled
			}
		})
		require.NoError(t, err)
		return pid
	}
	fast, err := sys.SpawnFunc(func(c *actor.Context) {
		if _, ok := c.Message().(string); ok {
			c.Respond("fast")
		}
	})
	require.NoError(t, err)
	g, err := router.NewGroup(sys, router.Config{Kind: router.ScatterGatherFirst}, router.Of(slow()), router.Of(fast), router.Of(slow()))
	require.NoError(t, err)
	v, err := router.RequestAs[string](ctxT(t, 10*time.Second), g.Router, sys, "q")
	require.NoError(t, err)
	require.Equal(t, "fast", v)
	// Both losers are counted, each as cancelled: may have executed, or
	// not executed when the cancel came before its request left (a
	// loaded machine can start a loser's goroutine that late).
	eventually(t, 5*time.Second, "both losers counted", func() bool {
		st := g.Stats()
		return st.ScatterFailed[actor.MayHaveExecuted]+st.ScatterFailed[actor.NotExecuted] == 2
	})
	require.Zero(t, g.Stats().ScatterLate, "a routee that never answers is not late")
	require.NoError(t, g.Close(ctxT(t, 5*time.Second)))

	rejecter, err := sys.SpawnFunc(func(c *actor.Context) {
		if _, ok := c.Message().(string); ok {
			c.RespondError(errors.New("refused"))
		}
	})
	require.NoError(t, err)
	g2, err := router.NewGroup(sys, router.Config{Kind: router.ScatterGatherFirst}, router.Of(rejecter), router.Named("", "nobody"))
	require.NoError(t, err)
	defer g2.Close(ctxT(t, 5*time.Second))
	_, err = g2.Request(ctxT(t, 10*time.Second), sys, "q")
	var se *router.ScatterError
	require.ErrorAs(t, err, &se)
	require.Len(t, se.Errs, 2)
	require.ErrorIs(t, err, actor.ErrNoProcess)
	require.Equal(t, actor.Executed, actor.Outcome(err), "one routee handled it and refused")

	g3, err := router.NewGroup(sys, router.Config{Kind: router.ScatterGatherFirst}, router.Named("", "nobody"), router.Named("", "none"))
	require.NoError(t, err)
	defer g3.Close(ctxT(t, 5*time.Second))
	_, err = g3.Request(ctxT(t, 10*time.Second), sys, "q")
	require.Equal(t, actor.NotExecuted, actor.Outcome(err), "no routee ran it: %v", err)
}
