package actorhooks_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// TestFailedOutcomes: failed calls and requests are counted by outcome,
// whichever Caller made them; successes are not counted.
func TestFailedOutcomes(t *testing.T) {
	sys := start(t)
	require.NoError(t, sys.RegisterTypes(&testpb.Echo{}))
	require.NoError(t, sys.Register("ok", func(_ context.Context, arg proto.Message) (proto.Message, error) { return arg, nil }))
	require.NoError(t, sys.Register("reject", func(context.Context, proto.Message) (proto.Message, error) {
		return nil, actor.Reject("nope", "refused on purpose")
	}))
	entered := make(chan struct{})
	require.NoError(t, sys.Register("block", func(ctx context.Context, _ proto.Message) (proto.Message, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	arg := &testpb.Echo{Text: "x"}
	count := func() [3]uint64 { return actorhooks.FailedOutcomes(sys) }
	require.Equal(t, [3]uint64{}, count())

	_, err := sys.Call(context.Background(), "", "ok", arg)
	require.NoError(t, err)
	_, err = sys.Call(context.Background(), "", "reject", arg)
	require.Error(t, err)
	_, err = sys.NewSender().Call(context.Background(), "", "missing", arg)
	require.ErrorIs(t, err, actor.ErrNoFunction)
	_, err = sys.Request(context.Background(), actor.PID{Node: sys.Name(), Incarnation: sys.Incarnation(), ID: 1 << 40}, "hi")
	require.ErrorIs(t, err, actor.ErrNoProcess)
	_, err = sys.RequestNamed(context.Background(), "", "nobody", "hi")
	require.ErrorIs(t, err, actor.ErrNoProcess)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	_, err = sys.Call(ctx, "", "block", arg)
	require.True(t, errors.Is(err, context.Canceled))
	require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err))

	got := count()
	require.Equal(t, uint64(1), got[actor.Executed], "the rejection")
	require.Equal(t, uint64(3), got[actor.NotExecuted], "no function, no process twice")
	require.Equal(t, uint64(1), got[actor.MayHaveExecuted], "cancelled while running")
}
