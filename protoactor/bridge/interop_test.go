package bridge_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	mr "github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/protoactor/bridge"
	"github.com/mailroom-go/mailroom/protoactor/internal/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// A protoactor actor calls and casts a mailroom function.
func TestProtoactorToMailroomFunction(t *testing.T) {
	a, b := pair(t)
	var casts atomic.Int64
	require.NoError(t, b.Mailroom.Register("double", func(_ context.Context, arg proto.Message) (proto.Message, error) {
		p := arg.(*testpb.Ping)
		if p.Text == "cast" {
			casts.Add(1)
			return nil, nil
		}
		return &testpb.Pong{N: 2 * p.N}, nil
	}))
	res, err := bridge.Result(a.Actors.Root.RequestFuture(bridge.FunctionPID("b", "double"), &testpb.Ping{N: 21}, futureTimeout))
	require.NoError(t, err)
	require.Equal(t, int64(42), res.(*testpb.Pong).N)

	a.Actors.Root.Send(bridge.FunctionPID("b", "double"), &testpb.Ping{Text: "cast"})
	eventually(t, "the cast ran", func() bool { return casts.Load() == 1 })

	_, err = bridge.Result(a.Actors.Root.RequestFuture(bridge.FunctionPID("b", "missing"), &testpb.Ping{}, futureTimeout))
	require.ErrorIs(t, err, mr.ErrNoFunction)
	require.Equal(t, mr.NotExecuted, mr.Outcome(err))
}

// A protoactor actor talks to mailroom actors by name and by PID, gets
// their answers (futures and actor requests), and watches one.
func TestProtoactorToMailroomActor(t *testing.T) {
	a, b := pair(t)
	mrEcho := mr.PropsFromFunc(func(c *mr.Context) {
		if p, ok := c.Message().(*testpb.Ping); ok {
			c.Respond(&testpb.Pong{Text: "mailroom " + p.Text})
		}
	})
	named, err := b.Mailroom.SpawnNamed(mrEcho, "mr-echo")
	require.NoError(t, err)
	res, err := bridge.Result(a.Actors.Root.RequestFuture(bridge.NamePID("b", "mr-echo"), &testpb.Ping{Text: "by name"}, futureTimeout))
	require.NoError(t, err)
	require.Equal(t, "mailroom by name", res.(*testpb.Pong).Text)

	res, err = bridge.Result(a.Actors.Root.RequestFuture(bridge.MailroomPID(named), &testpb.Ping{Text: "by pid"}, futureTimeout))
	require.NoError(t, err)
	require.Equal(t, "mailroom by pid", res.(*testpb.Pong).Text)

	p, got := spawnProbe(t, a)
	a.Actors.Root.Send(p, requestCmd{pid: bridge.NamePID("b", "mr-echo"), msg: &testpb.Ping{Text: "from an actor"}})
	require.Equal(t, "mailroom from an actor", next(t, got).(*testpb.Pong).Text)

	// Watch a mailroom actor, then stop it on its node. (The stop may
	// overtake the watch: then the watch finds it gone, NotFound.)
	a.Actors.Root.Send(p, watchCmd{pid: bridge.MailroomPID(named)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.Mailroom.StopActorWait(ctx, named))
	term := next(t, got).(*actor.Terminated)
	require.Equal(t, bridge.MailroomPID(named).Id, term.Who.Id)
	require.Contains(t, []actor.TerminatedReason{actor.TerminatedReason_Stopped, actor.TerminatedReason_NotFound}, term.Why)
	a.Actors.Root.Send(p, watchCmd{pid: bridge.MailroomPID(named)})
	term = next(t, got).(*actor.Terminated)
	require.Equal(t, actor.TerminatedReason_NotFound, term.Why)

	_, err = bridge.Result(a.Actors.Root.RequestFuture(bridge.NamePID("b", "nobody"), &testpb.Ping{}, futureTimeout))
	require.ErrorIs(t, err, mr.ErrNoProcess)
}

// Mailroom code reaches protoactor actors with Bridge.Request: here a
// mailroom function on b asks a protoactor actor on a, called from a.
func TestMailroomToProtoactor(t *testing.T) {
	a, b := pair(t)
	spawnEcho(t, a, "echo")
	require.NoError(t, b.Mailroom.Register("ask", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		return b.Bridge.Request(ctx, actor.NewPID(bridge.NodeAddress("a"), "echo"), arg)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a.Mailroom.Call(ctx, "b", "ask", &testpb.Ping{Text: "round trip", N: 3})
	require.NoError(t, err)
	require.Equal(t, "round trip", res.(*testpb.Pong).Text)

	_, err = b.Bridge.Request(ctx, actor.NewPID(bridge.NodeAddress("a"), "nobody"), &testpb.Ping{})
	require.ErrorIs(t, err, mr.ErrNoProcess)
	_, err = b.Bridge.Request(ctx, actor.NewPID(b.Bridge.Address(), "nobody-local"), &testpb.Ping{})
	require.ErrorIs(t, err, mr.ErrNoProcess)

	_, err = a.Actors.Root.SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), "silent")
	require.NoError(t, err)
	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	_, err = b.Bridge.Request(short, actor.NewPID(bridge.NodeAddress("a"), "silent"), &testpb.Ping{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, mr.MayHaveExecuted, mr.Outcome(err))

	b.Bridge.Send(actor.NewPID(bridge.NodeAddress("a"), "echo"), &testpb.Ping{})
	res, err = b.Bridge.Request(ctx, actor.NewPID(bridge.NodeAddress("a"), "echo"), &testpb.Ping{Text: "count?"})
	require.NoError(t, err)
	require.Equal(t, int64(1), res.(*testpb.Pong).N)
}
