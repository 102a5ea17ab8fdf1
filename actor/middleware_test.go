package actor

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHeadersLocalSendAndRequest(t *testing.T) {
	s := newSystem(t, "n")
	got := make(chan Headers, 4)
	pid, err := s.SpawnFunc(func(c *Context) {
		switch c.Message().(type) {
		case string:
			got <- c.Headers()
			c.Respond("ok")
		}
	})
	require.NoError(t, err)
	ctx := WithHeader(WithHeader(context.Background(), "a", "1"), "b", "2")
	ctx = WithHeader(ctx, "a", "3") // replaces
	s.SendContext(ctx, pid, "x")
	h := <-got
	require.Equal(t, Headers{{"b", "2"}, {"a", "3"}}, h)
	_, err = s.Request(WithHeader(ctxT(t), "k", "v"), pid, "y")
	require.NoError(t, err)
	v, ok := (<-got).Get("k")
	require.True(t, ok)
	require.Equal(t, "v", v)
	s.Send(pid, "plain")
	require.Nil(t, <-got, "a message sent without headers has none")
}

// Headers a handler received are not inherited by what it sends.
func TestHeadersNotInherited(t *testing.T) {
	s := newSystem(t, "n")
	got := make(chan Headers, 1)
	sink, _ := s.SpawnFunc(func(c *Context) {
		if _, ok := c.Message().(int); ok {
			got <- c.Headers()
		}
	})
	fwd, _ := s.SpawnFunc(func(c *Context) {
		if _, ok := c.Message().(string); ok {
			c.Send(sink, 1)
		}
	})
	s.SendContext(WithHeader(context.Background(), "k", "v"), fwd, "go")
	require.Nil(t, <-got)
}

func TestMiddlewareOrderAndHeaders(t *testing.T) {
	var mu sync.Mutex
	var trail []string
	note := func(s string) { mu.Lock(); trail = append(trail, s); mu.Unlock() }
	recvMW := func(tag string) ReceiveMiddleware {
		return func(next ReceiveFunc) ReceiveFunc {
			return func(c *Context) {
				if _, ok := c.Message().(string); ok {
					v, _ := c.Headers().Get("by")
					note(tag + ":" + v)
				}
				next(c)
			}
		}
	}
	sendMW := func(tag string) SendMiddleware {
		return func(next SendFunc) SendFunc {
			return func(ctx context.Context, om *OutMessage) (any, error) {
				if om.Op == OpSend {
					prev, _ := HeadersFrom(ctx).Get("by")
					ctx = WithHeader(ctx, "by", prev+tag)
				}
				return next(ctx, om)
			}
		}
	}
	s, err := Start(Config{Name: "n", Logger: DiscardLogger(),
		ReceiveMiddleware: []ReceiveMiddleware{recvMW("sys")},
		SendMiddleware:    []SendMiddleware{sendMW("S")}})
	require.NoError(t, err)
	defer s.Stop(context.Background())
	done := make(chan struct{}, 2)
	target, err := s.Spawn(&Props{Producer: func() Actor {
		return ReceiveFunc(func(c *Context) {
			if _, ok := c.Message().(string); ok {
				note("actor")
				done <- struct{}{}
			}
		})
	}, ReceiveMiddleware: []ReceiveMiddleware{recvMW("own")}})
	require.NoError(t, err)
	src, err := s.Spawn(&Props{Producer: func() Actor {
		return ReceiveFunc(func(c *Context) {
			if _, ok := c.Message().(int); ok {
				c.Send(target, "hi")
			}
		})
	}, SendMiddleware: []SendMiddleware{sendMW("P")}})
	require.NoError(t, err)
	s.Send(src, 1) // from the System: "S" only; the actor's send: "P" then "S"
	<-done
	mu.Lock()
	require.Equal(t, []string{"sys:PS", "own:PS", "actor"}, trail)
	trail = nil
	mu.Unlock()
	s.Send(target, "direct")
	<-done
	mu.Lock()
	require.Equal(t, []string{"sys:S", "own:S", "actor"}, trail)
	mu.Unlock()
}

// A send middleware that refuses makes a send a dead letter and a
// request an error.
func TestSendMiddlewareRefuses(t *testing.T) {
	no := errors.New("refused")
	s, err := Start(Config{Name: "n", Logger: DiscardLogger(), SendMiddleware: []SendMiddleware{
		func(next SendFunc) SendFunc {
			return func(ctx context.Context, om *OutMessage) (any, error) { return nil, no }
		}}})
	require.NoError(t, err)
	defer s.Stop(context.Background())
	pid, _ := s.SpawnFunc(func(c *Context) { c.Respond(1) })
	_, err = s.Request(ctxT(t), pid, "x")
	require.ErrorIs(t, err, no)
	before := s.DeadLetters()
	s.Send(pid, "x")
	require.Equal(t, before+1, s.DeadLetters())
}
