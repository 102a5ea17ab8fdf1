package actor

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

func echoHandler(ctx context.Context, arg proto.Message) (proto.Message, error) {
	e := arg.(*testpb.Echo)
	return &testpb.Echo{Text: "echo " + e.Text, N: e.N + 1}, nil
}

func TestCallLocalFunction(t *testing.T) {
	s := newSystem(t, "n")
	require.NoError(t, s.Register("echo", echoHandler))
	require.ErrorIs(t, s.Register("echo", echoHandler), ErrNameTaken)

	v, err := s.Call(ctxT(t), "n", "echo", &testpb.Echo{Text: "hi", N: 1})
	require.NoError(t, err)
	require.Equal(t, "echo hi", v.(*testpb.Echo).Text)
	// "" means the local node too, and a call without a cancellable ctx runs inline.
	v, err = s.Call(context.Background(), "", "echo", &testpb.Echo{Text: "x"})
	require.NoError(t, err)
	require.Equal(t, int64(1), v.(*testpb.Echo).N)
}

func TestCallRejectionPanicAndMissing(t *testing.T) {
	s := newSystem(t, "n")
	errInsufficient := Reject("insufficient_funds", "balance too low")
	require.NoError(t, s.Register("reject", func(context.Context, proto.Message) (proto.Message, error) {
		return nil, errInsufficient
	}))
	require.NoError(t, s.Register("panic", func(context.Context, proto.Message) (proto.Message, error) {
		panic("handler bug")
	}))

	_, err := s.Call(ctxT(t), "n", "reject", &testpb.Echo{})
	var re *RemoteError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "insufficient_funds", re.Code)
	require.ErrorIs(t, err, errInsufficient)
	require.Equal(t, Executed, Outcome(err))
	require.Contains(t, err.Error(), "call reject on node n")
	require.Contains(t, err.Error(), "rejected [insufficient_funds]: balance too low")

	_, err = s.Call(ctxT(t), "n", "panic", &testpb.Echo{})
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "handler bug", pe.Value)
	require.Equal(t, Executed, Outcome(err))

	_, err = s.Call(ctxT(t), "n", "missing", &testpb.Echo{})
	require.ErrorIs(t, err, ErrNoFunction)
	require.Equal(t, NotExecuted, Outcome(err))
	require.Contains(t, err.Error(), "to missing: no such function: not executed; safe to retry")

	_, err = s.Call(ctxT(t), "elsewhere", "echo", &testpb.Echo{})
	require.ErrorIs(t, err, ErrUnreachable, "no transport attached: other nodes are unreachable")
}

func TestCallDeadlinePassedIsNotExecuted(t *testing.T) {
	s := newSystem(t, "n")
	var ran atomic.Int64
	require.NoError(t, s.Register("count", func(context.Context, proto.Message) (proto.Message, error) {
		ran.Add(1)
		return &testpb.Echo{}, nil
	}))
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := s.Call(ctx, "n", "count", &testpb.Echo{})
	require.Equal(t, NotExecuted, Outcome(err))
	require.Zero(t, ran.Load())
}

func TestCallCancelReachesHandler(t *testing.T) {
	s := newSystem(t, "n")
	started, sawCancel := make(chan struct{}), make(chan struct{})
	require.NoError(t, s.Register("wait", func(ctx context.Context, _ proto.Message) (proto.Message, error) {
		close(started)
		<-ctx.Done()
		close(sawCancel)
		return nil, ctx.Err()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { _, err := s.Call(ctx, "n", "wait", &testpb.Echo{}); res <- err }()
	<-started
	cancel()
	err := <-res
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, MayHaveExecuted, Outcome(err))
	<-sawCancel
}

func TestCastRunsAndCountsFailures(t *testing.T) {
	s := newSystem(t, "n")
	got := make(chan string, 1)
	require.NoError(t, s.Register("note", func(_ context.Context, arg proto.Message) (proto.Message, error) {
		got <- arg.(*testpb.Echo).Text
		return nil, nil
	}))
	require.NoError(t, s.Register("fail", func(context.Context, proto.Message) (proto.Message, error) {
		return nil, errors.New("no")
	}))
	s.Cast("n", "note", &testpb.Echo{Text: "cast!"})
	require.Equal(t, "cast!", <-got)
	s.Cast("n", "fail", &testpb.Echo{})
	eventually(t, "cast failure counted", func() bool { return s.CastFailures() == 1 })
	s.Cast("n", "missing", &testpb.Echo{})
	require.Equal(t, uint64(1), s.DeadLetters(), "a cast to a missing function is a dead letter")
}

func TestRegisterTypes(t *testing.T) {
	s := newSystem(t, "n")
	require.NoError(t, s.RegisterTypes(&testpb.Echo{}, &testpb.Echo{}))
	_, err := s.Config().Types.FindMessageByName("mailroom.testpb.Echo")
	require.NoError(t, err)
	_, err = s.Config().Types.FindMessageByName("mailroom.testpb.Blob")
	require.Error(t, err, "the registry is private to the system: nothing global leaks in")
}

// TestErrorCodeOfARejection: ErrorCode finds the code of a rejection
// however it arrived: from a handler here, rebuilt from the wire (no
// original error, only the code), or returned again by a handler that
// received it (the code passes on).
func TestErrorCodeOfARejection(t *testing.T) {
	s := newSystem(t, "n")
	require.NoError(t, s.Register("limit", func(context.Context, proto.Message) (proto.Message, error) {
		return nil, Reject("limit", "over the limit")
	}))
	_, err := s.Call(ctxT(t), "n", "limit", &testpb.Echo{})
	require.Equal(t, "limit", ErrorCode(err))

	// As the remote layer rebuilds it: a custom code names no sentinel.
	wire := &RemoteError{Op: "call", Node: "billing", Target: "charge", Code: "limit", Message: "over the limit", Err: SentinelForCode("limit")}
	require.Equal(t, "limit", ErrorCode(wire))
	require.Equal(t, "limit", ErrorCode(fmt.Errorf("wrapped: %w", wire)))

	// A handler that returns the rejection it received passes its code on.
	require.NoError(t, s.Register("relay", func(context.Context, proto.Message) (proto.Message, error) {
		return nil, wire
	}))
	_, err = s.Call(ctxT(t), "n", "relay", &testpb.Echo{})
	var re *RemoteError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "limit", re.Code)
	require.Equal(t, "limit", ErrorCode(err))
	require.Equal(t, Executed, Outcome(err))

	// An uncoded rejection stays uncoded; a sentinel's code is found.
	require.Equal(t, "", ErrorCode(&RemoteError{Message: "no code"}))
	require.Equal(t, "no_process", ErrorCode(&RemoteError{Err: ErrNoProcess}))
}
