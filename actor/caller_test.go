package actor

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// The three Callers send as their own identity: the target sees the
// actor, the handle, or the zero PID of the System's root handle.
func TestEveryCallerSendsAsItself(t *testing.T) {
	s := newSystem(t, "n")
	ctx := context.Background()
	senders := make(chan PID, 16)
	_, err := s.SpawnNamed(PropsFromFunc(func(c *Context) {
		switch c.Message().(type) {
		case string:
			senders <- c.Sender()
			c.Respond("ok")
		}
	}), "echo")
	require.NoError(t, err)
	echo, _ := s.Lookup("echo")

	h := s.NewSender()
	var self PID
	relay, err := s.SpawnFunc(func(c *Context) {
		if op, ok := c.Message().(int); ok {
			self = c.Self()
			every(t, ctx, c, echo, op)
			c.Respond("done")
		}
	})
	require.NoError(t, err)

	for op := range 4 {
		every(t, ctx, s, echo, op)
		require.Equal(t, PID{}, <-senders, "op %d from the System", op)
		every(t, ctx, h, echo, op)
		require.Equal(t, h.PID(), <-senders, "op %d from a Sender", op)
		_, err := s.Request(ctx, relay, op)
		require.NoError(t, err)
		require.Equal(t, self, <-senders, "op %d from an actor", op)
	}
}

// every runs operation op of Caller c toward echo: Send, SendNamed,
// Request, RequestNamed.
func every(t *testing.T, ctx context.Context, c Caller, echo PID, op int) {
	switch op {
	case 0:
		c.Send(echo, "send")
	case 1:
		c.SendNamed("", "echo", "send")
	case 2:
		v, err := c.Request(ctx, echo, "request")
		require.NoError(t, err)
		require.Equal(t, "ok", v)
	case 3:
		v, err := c.RequestNamed(ctx, "n", "echo", "request")
		require.NoError(t, err)
		require.Equal(t, "ok", v)
	}
}

func TestCallersCallAndCast(t *testing.T) {
	s := newSystem(t, "n")
	ctx := context.Background()
	ran := make(chan int64, 8)
	require.NoError(t, s.Register("f", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		ran <- arg.(*testpb.Echo).N
		return arg, nil
	}))
	callers := []Caller{s, s.NewSender()}
	for i, c := range callers {
		res, err := CallAs[*testpb.Echo](ctx, c, "", "f", &testpb.Echo{N: int64(i)})
		require.NoError(t, err)
		require.Equal(t, int64(i), res.N)
		require.Equal(t, int64(i), <-ran)
		c.Cast("n", "f", &testpb.Echo{N: 10 + int64(i)})
		require.Equal(t, 10+int64(i), <-ran)
	}
}

func TestTypedHelpersCheckTheAnswer(t *testing.T) {
	s := newSystem(t, "n")
	ctx := context.Background()
	pid, err := s.SpawnNamed(PropsFromFunc(func(c *Context) {
		switch m := c.Message().(type) {
		case string:
			switch m {
			case "nil":
				c.Respond(nil)
			case "reject":
				c.RespondError(Reject("no", "refused"))
			default:
				c.Respond(m + "!")
			}
		}
	}), "a")
	require.NoError(t, err)

	v, err := RequestAs[string](ctx, s, pid, "hi")
	require.NoError(t, err)
	require.Equal(t, "hi!", v)

	n, err := RequestAs[int](ctx, s, pid, "hi")
	require.Zero(t, n)
	require.ErrorIs(t, err, ErrReplyType)
	require.Equal(t, Executed, Outcome(err))
	require.Contains(t, err.Error(), "got string, want int")
	require.Contains(t, err.Error(), pid.String())
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "request", e.Op)

	_, err = RequestNamedAs[fmt.Stringer](ctx, s, "", "a", "hi")
	require.ErrorIs(t, err, ErrReplyType)
	require.Contains(t, err.Error(), `to name "a"`)
	require.Contains(t, err.Error(), "want fmt.Stringer")

	v, err = RequestNamedAs[string](ctx, s, "", "a", "nil")
	require.NoError(t, err, "a nil answer is the zero value")
	require.Equal(t, "", v)

	// Errors pass through untouched, whatever the type asked for.
	_, err = RequestAs[string](ctx, s, pid, "reject")
	var re *RemoteError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "no", re.Code)
	_, err = RequestNamedAs[string](ctx, s, "", "nobody", "hi")
	require.ErrorIs(t, err, ErrNoProcess)
	require.Equal(t, NotExecuted, Outcome(err))

	_, err = CallAs[*testpb.Echo](ctx, s, "", "none", &testpb.Echo{})
	require.ErrorIs(t, err, ErrNoFunction)

	// A bare ErrReplyType (a handler passing one on) reads as executed,
	// and keeps its code across the wire.
	require.Equal(t, Executed, Outcome(fmt.Errorf("x: %w", ErrReplyType)))
	require.Equal(t, "reply_type", ErrorCode(ErrReplyType))
	require.True(t, errors.Is(SentinelForCode("reply_type"), ErrReplyType))
}

func TestCallAsNilResult(t *testing.T) {
	s := newSystem(t, "n")
	require.NoError(t, s.Register("nothing", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		return nil, nil
	}))
	res, err := CallAs[*testpb.Echo](context.Background(), s, "", "nothing", &testpb.Echo{})
	require.NoError(t, err)
	require.Nil(t, res)
}
