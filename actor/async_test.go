package actor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A slow target: it keeps each request until released.
func slowTarget(t *testing.T, s *System) (PID, chan struct{}) {
	release := make(chan struct{})
	pid, err := s.SpawnFunc(func(c *Context) {
		if m, ok := c.Message().(int); ok {
			r := c.Defer()
			go func() { <-release; r.Reply(m*2, nil) }()
		}
	})
	require.NoError(t, err)
	return pid, release
}

func TestRequestAsyncDoesNotBlockTheActor(t *testing.T) {
	s := newSystem(t, "n")
	slow, release := slowTarget(t, s)
	got := make(chan any, 1)
	var asker PID
	asker, err := s.SpawnFunc(func(c *Context) {
		switch m := c.Message().(type) {
		case int:
			c.RequestAsync(ctxT(t), slow, m, func(c *Context, reply any, err error) {
				require.Equal(t, asker, c.Self(), "the continuation runs as this actor")
				got <- reply
			})
		case string:
			c.Respond("pong")
		}
	})
	require.NoError(t, err)
	s.Send(asker, 21)
	v, err := s.Request(ctxT(t), asker, "ping") // answered while the request waits
	require.NoError(t, err)
	require.Equal(t, "pong", v)
	close(release)
	require.Equal(t, 42, <-got)
}

// A request's failure and deadline reach the continuation as a blocking
// Request's would.
func TestRequestAsyncOutcomes(t *testing.T) {
	s := newSystem(t, "n")
	slow, release := slowTarget(t, s)
	defer close(release)
	errs := make(chan error, 2)
	asker, _ := s.SpawnFunc(func(c *Context) {
		if _, ok := c.Message().(string); ok {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			c.RequestAsync(ctx, slow, 1, func(c *Context, _ any, err error) { cancel(); errs <- err })
			c.RequestAsync(ctxT(t), PID{Node: "n", Incarnation: s.Incarnation(), ID: 1 << 40}, 1, func(c *Context, _ any, err error) { errs <- err })
		}
	})
	s.Send(asker, "go")
	var deadline, gone bool
	for i := 0; i < 2; i++ {
		err := <-errs
		deadline = deadline || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrDeadlineExceeded)
		gone = gone || errors.Is(err, ErrNoProcess)
	}
	require.True(t, deadline && gone)
}

// The continuation of an actor that has stopped is dropped and counted.
func TestContinuationOfAStoppedActorIsDropped(t *testing.T) {
	s := newSystem(t, "n")
	slow, release := slowTarget(t, s)
	ran := make(chan struct{}, 1)
	asker, _ := s.SpawnFunc(func(c *Context) {
		if _, ok := c.Message().(string); ok {
			c.RequestAsync(ctxT(t), slow, 1, func(*Context, any, error) { ran <- struct{}{} })
			c.Respond("asked")
		}
	})
	_, err := s.Request(ctxT(t), asker, "go")
	require.NoError(t, err)
	require.NoError(t, s.StopActorWait(ctxT(t), asker))
	close(release)
	eventually(t, "a dropped continuation", func() bool { return s.DroppedContinuations() == 1 })
	select {
	case <-ran:
		t.Fatal("a stopped actor's continuation ran")
	default:
	}
}

func TestPipeTo(t *testing.T) {
	s := newSystem(t, "n")
	slow, release := slowTarget(t, s)
	close(release)
	out := make(chan any, 2)
	sink, _ := s.SpawnFunc(func(c *Context) {
		switch c.Message().(type) {
		case int, RequestFailed:
			out <- c.Message()
		}
	})
	asker, _ := s.SpawnFunc(func(c *Context) {
		if _, ok := c.Message().(string); ok {
			c.PipeTo(ctxT(t), slow, 5, sink)
			c.PipeTo(ctxT(t), PID{Node: "n", Incarnation: s.Incarnation(), ID: 1 << 40}, 5, sink)
		}
	})
	s.Send(asker, "go")
	var n, failed int
	for i := 0; i < 2; i++ {
		switch m := (<-out).(type) {
		case int:
			n = m
		case RequestFailed:
			require.ErrorIs(t, m.Err, ErrNoProcess)
			failed++
		}
	}
	require.Equal(t, 10, n)
	require.Equal(t, 1, failed)
}
