package actor

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBecomeStackedAndUnbecome(t *testing.T) {
	s := newSystem(t, "n")
	pid, err := s.SpawnFunc(func(c *Context) {
		switch c.Message() {
		case "push":
			c.BecomeStacked(func(c *Context) {
				switch c.Message() {
				case "pop":
					c.Unbecome()
					c.Respond("popped")
				case "swap":
					c.Become(func(c *Context) {
						if c.Message() == "pop" {
							c.Unbecome()
							c.Respond("popped swapped")
							return
						}
						c.Respond("swapped")
					})
					c.Respond("ok")
				default:
					c.Respond("pushed")
				}
			})
			c.Respond("ok")
		default:
			if _, ok := c.Message().(string); ok {
				c.Respond("base")
			}
		}
	})
	require.NoError(t, err)
	ask := func(m string) any {
		v, err := s.Request(ctxT(t), pid, m)
		require.NoError(t, err)
		return v
	}
	require.Equal(t, "base", ask("x"))
	require.Equal(t, "ok", ask("push"))
	require.Equal(t, "pushed", ask("x"))
	require.Equal(t, "ok", ask("swap")) // replaces the top, not a push
	require.Equal(t, "swapped", ask("x"))
	require.Equal(t, "popped swapped", ask("pop"))
	require.Equal(t, "base", ask("x"), "Become replaced the pushed behaviour: one pop is back to Receive")
}

// A stashed request is answered when it is handled again, after
// UnstashAll, in the order stashed and ahead of later messages.
func TestStashUnstashAllKeepsOrderAndRequests(t *testing.T) {
	s := newSystem(t, "n")
	var order []string
	done := make(chan []string, 1)
	stashed := make(chan string, 4)
	pid, err := s.SpawnFunc(func(c *Context) {
		m, ok := c.Message().(string)
		if !ok {
			return
		}
		switch {
		case m == "open":
			c.Become(func(c *Context) {
				m, _ := c.Message().(string)
				order = append(order, m)
				if m == "end" {
					done <- order
				}
				c.Respond("answered " + m)
			})
			c.UnstashAll()
		default:
			if err := c.Stash(); err == nil {
				stashed <- m
			}
		}
	})
	require.NoError(t, err)
	answers := make(chan any, 1)
	go func() {
		v, _ := s.Request(context.Background(), pid, "r1")
		answers <- v
	}()
	require.Equal(t, "r1", <-stashed)
	s.Send(pid, "s2")
	s.Send(pid, "open")
	s.Send(pid, "end")
	require.Equal(t, []string{"r1", "s2", "end"}, <-done)
	require.Equal(t, "answered r1", <-answers)
}

// Stash past Props.StashLimit is an error the actor sees; the message
// stays its own to handle.
func TestStashLimitIsAnError(t *testing.T) {
	s := newSystem(t, "n")
	errs := make(chan error, 4)
	pid, err := s.Spawn(&Props{StashLimit: 2, Producer: func() Actor {
		return ReceiveFunc(func(c *Context) {
			if _, ok := c.Message().(int); ok {
				err := c.Stash()
				if err != nil {
					c.Respond("kept")
				}
				errs <- err
			}
		})
	}})
	require.NoError(t, err)
	s.Send(pid, 1)
	s.Send(pid, 2)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	v, err := s.Request(ctxT(t), pid, 3)
	require.NoError(t, err)
	require.Equal(t, "kept", v)
	require.ErrorIs(t, <-errs, ErrStashFull)
}

// What an actor stashed when it ends is not lost silently: its sends are
// dead letters, its requests fail, may have executed.
func TestStashOfAnEndingActor(t *testing.T) {
	s := newSystem(t, "n")
	stashed := make(chan struct{}, 2)
	pid, err := s.SpawnFunc(func(c *Context) {
		switch c.Message().(type) {
		case int:
			if c.Stash() == nil {
				stashed <- struct{}{}
			}
		case string:
			c.Stop(c.Self())
		}
	})
	require.NoError(t, err)
	before := s.DeadLetters()
	s.Send(pid, 1)
	res := make(chan error, 1)
	go func() { _, err := s.Request(context.Background(), pid, 2); res <- err }()
	<-stashed
	<-stashed
	s.Send(pid, "stop")
	err = <-res
	require.True(t, errors.Is(err, ErrNoProcess), "%v", err)
	require.Equal(t, MayHaveExecuted, Outcome(err))
	require.GreaterOrEqual(t, s.DeadLetters(), before+2)
}
