package bridge_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	mr "github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/protoactor/bridge"
	"github.com/mailroom-go/mailroom/protoactor/internal/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

func TestAddresses(t *testing.T) {
	require.Equal(t, "mailroom://orders-1/9f1c", bridge.Address("orders-1", 0x9f1c))
	require.Equal(t, "mailroom://orders-1", bridge.NodeAddress("orders-1"))
	require.Equal(t, "mailroom:pid:ff/12", bridge.MailroomPID(mr.PID{Node: "b", Incarnation: 0xff, ID: 12}).Id)
	require.Equal(t, bridge.NodeAddress("b"), bridge.MailroomPID(mr.PID{Node: "b", Incarnation: 0xff, ID: 12}).Address)
	require.Equal(t, "mailroom:name:counter", bridge.NamePID("b", "counter").Id)
	require.Equal(t, "mailroom:fn:charge", bridge.FunctionPID("b", "charge").Id)
}

func TestConfigValidation(t *testing.T) {
	sys, err := mr.Start(mr.Config{Name: "cfg", Logger: mr.DiscardLogger()})
	require.NoError(t, err)
	defer sys.Stop(context.Background())
	pas := quietActorSystem()
	for _, c := range []struct {
		cfg   bridge.Config
		field string
	}{
		{bridge.Config{Lanes: -1}, "Lanes"},
		{bridge.Config{Lanes: 5000}, "Lanes"},
		{bridge.Config{MaxQueued: -1}, "MaxQueued"},
		{bridge.Config{MaxWatchesPerPeer: -2}, "MaxWatchesPerPeer"},
		{bridge.Config{EndpointMailbox: -3}, "EndpointMailbox"},
	} {
		_, err := bridge.Start(pas, sys, c.cfg)
		require.ErrorContains(t, err, c.field)
	}
	_, err = bridge.StartNode(context.Background(), bridge.NodeConfig{Name: "x", Remote: remote.Config{Cookie: "short"}})
	require.ErrorContains(t, err, "want at least 16")
}

// A bridge is attached once per mailroom System: a second one is refused
// by name, and the first keeps working.
func TestSecondBridgeRefused(t *testing.T) {
	n := startNode(t, "solo")
	_, err := bridge.Start(quietActorSystem(), n.Mailroom, bridge.Config{})
	require.ErrorContains(t, err, "already attached")
}

// Sends keep their order with a request that follows them: the request
// sees every send before it. The same over the proxy pool and the native
// path.
func TestSendThenRequestFuture(t *testing.T) {
	for _, native := range []bool{false, true} {
		t.Run(map[bool]string{false: "pooled", true: "native"}[native], func(t *testing.T) {
			a, b := pair(t, func(c *bridge.NodeConfig) { c.Native = native })
			spawnEcho(t, b, "echo")
			target := actor.NewPID(bridge.NodeAddress("b"), "echo")
			for i := range 500 {
				a.Actors.Root.Send(target, &testpb.Ping{N: int64(i)})
			}
			res, err := bridge.Result(a.Actors.Root.RequestFuture(target, &testpb.Ping{Text: "count?"}, futureTimeout))
			require.NoError(t, err)
			require.Equal(t, int64(500), res.(*testpb.Pong).N)

			res, err = a.Actors.Root.RequestFuture(target, &testpb.Ping{Text: "hi", N: 7}, futureTimeout).Result()
			require.NoError(t, err)
			require.Equal(t, "hi", res.(*testpb.Pong).Text)
			require.Equal(t, int64(7), res.(*testpb.Pong).N)
			st := a.Bridge.Stats()
			require.Equal(t, uint64(2), st.Requests)
			require.Equal(t, uint64(502), st.Sent)
			require.Equal(t, 1, st.Peers)
		})
	}
}

// A PID the other node spawned (pinned to its incarnation) works from
// here, and the reply to an actor's Request comes back as a message.
func TestActorRequestRespond(t *testing.T) {
	a, b := pair(t)
	echoPID := b.Actors.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &echo{} }))
	require.Equal(t, bridge.Address("b", b.Mailroom.Incarnation()), echoPID.Address)
	p, got := spawnProbe(t, a)
	a.Actors.Root.Send(p, requestCmd{pid: echoPID, msg: &testpb.Ping{Text: "from an actor"}})
	require.Equal(t, "from an actor", next(t, got).(*testpb.Pong).Text)
}

// A request forwarded to a third node is answered from there straight to
// the future.
func TestForwardedRequestAnsweredFromThirdNode(t *testing.T) {
	a, b := pair(t)
	c := startNode(t, "c")
	link(t, a, c)
	link(t, b, c)
	spawnEcho(t, c, "echo")
	onC := actor.NewPID(bridge.NodeAddress("c"), "echo")
	_, err := b.Actors.Root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*testpb.Ping); ok {
			ctx.Forward(onC)
		}
	}), "forwarder")
	require.NoError(t, err)
	res, err := bridge.Result(a.Actors.Root.RequestFuture(actor.NewPID(bridge.NodeAddress("b"), "forwarder"), &testpb.Ping{Text: "via b"}, futureTimeout))
	require.NoError(t, err)
	require.Equal(t, "via b", res.(*testpb.Pong).Text)
}

func TestWatchRemoteStopAndNotFound(t *testing.T) {
	a, b := pair(t)
	target := spawnEcho(t, b, "doomed")
	p, got := spawnProbe(t, a)
	remote := actor.NewPID(bridge.Address("b", b.Mailroom.Incarnation()), "doomed")
	// The watch is set once b's actor holds it: the probe's request after
	// it, on the same path, is answered after the watch was delivered.
	a.Actors.Root.Send(p, watchCmd{pid: remote})
	a.Actors.Root.Send(p, requestCmd{pid: remote, msg: &testpb.Ping{Text: "x"}})
	require.Equal(t, "x", next(t, got).(*testpb.Pong).Text)
	require.NoError(t, b.Actors.Root.StopFuture(target).Wait())
	term := next(t, got).(*actor.Terminated)
	require.Equal(t, "doomed", term.Who.Id)
	require.Equal(t, actor.TerminatedReason_Stopped, term.Why)

	a.Actors.Root.Send(p, watchCmd{pid: actor.NewPID(bridge.NodeAddress("b"), "never-spawned")})
	term = next(t, got).(*actor.Terminated)
	require.Equal(t, "never-spawned", term.Who.Id)
	require.Equal(t, actor.TerminatedReason_NotFound, term.Why)
}

// A PID of an earlier incarnation never reaches an actor of a later one.
func TestStaleIncarnationRefused(t *testing.T) {
	a, b := pair(t)
	spawnEcho(t, b, "echo")
	old := actor.NewPID(bridge.Address("b", b.Mailroom.Incarnation()^1), "echo")
	_, err := bridge.Result(a.Actors.Root.RequestFuture(old, &testpb.Ping{}, futureTimeout))
	require.ErrorIs(t, err, mr.ErrNoProcess)
	require.Equal(t, mr.NotExecuted, mr.Outcome(err))
	require.ErrorContains(t, err, "an earlier one")

	// The same for this node's own earlier incarnation.
	selfOld := actor.NewPID(bridge.Address("a", a.Mailroom.Incarnation()^1), "x")
	_, err = bridge.Result(a.Actors.Root.RequestFuture(selfOld, &testpb.Ping{}, futureTimeout))
	require.ErrorIs(t, err, mr.ErrNoProcess)
}

func TestNoSuchProcess(t *testing.T) {
	a, _ := pair(t)
	_, err := bridge.Result(a.Actors.Root.RequestFuture(actor.NewPID(bridge.NodeAddress("b"), "nobody"), &testpb.Ping{}, futureTimeout))
	require.ErrorIs(t, err, mr.ErrNoProcess)
	require.Equal(t, mr.NotExecuted, mr.Outcome(err))
	require.ErrorContains(t, err, `no protoactor process "nobody" on node b`)
}

func TestUnreachableAndBridgeless(t *testing.T) {
	a := startNode(t, "a")
	start := time.Now()
	_, err := bridge.Result(a.Actors.Root.RequestFuture(actor.NewPID(bridge.NodeAddress("nowhere"), "x"), &testpb.Ping{}, futureTimeout))
	require.ErrorIs(t, err, mr.ErrUnreachable)
	require.Equal(t, mr.NotExecuted, mr.Outcome(err))
	require.Less(t, time.Since(start), 10*time.Second)

	// A mailroom node without a bridge refuses the session.
	plain, err := mr.Start(mr.Config{Name: "plain", Logger: mr.DiscardLogger()})
	require.NoError(t, err)
	defer plain.Stop(context.Background())
	plainNode := startRemote(t, plain)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Remote.Connect(ctx, "plain", plainNode.Addr()))
	_, err = bridge.Result(a.Actors.Root.RequestFuture(actor.NewPID(bridge.NodeAddress("plain"), "x"), &testpb.Ping{}, futureTimeout))
	require.ErrorIs(t, err, mr.ErrNoProcess)
	require.ErrorContains(t, err, "runs no protoactor bridge")
}

// An unregistered type is a clear error on both sides: the receiver logs
// and counts it, the requester's future names the node and the type, and
// a plain send is reported back to the sending bridge.
func TestUnregisteredType(t *testing.T) {
	var logA, logB logBuffer
	a := startNode(t, "a", withLog(&logA))
	b := startNode(t, "b", withLog(&logB))
	link(t, a, b)
	spawnEcho(t, b, "echo")
	target := actor.NewPID(bridge.NodeAddress("b"), "echo")

	_, err := bridge.Result(a.Actors.Root.RequestFuture(target, &testpb.Unregistered{Text: "?"}, futureTimeout))
	require.ErrorIs(t, err, mr.ErrBadMessage)
	require.Equal(t, mr.NotExecuted, mr.Outcome(err))
	require.ErrorContains(t, err, `message type "mailroom.protoactor.test.Unregistered" is not registered on node b`)
	require.Equal(t, uint64(1), b.Bridge.Stats().BadMessages)
	require.Contains(t, logB.String(), "message refused")

	a.Actors.Root.Send(target, &testpb.Unregistered{Text: "plain"})
	eventually(t, "a hears b refused its plain send", func() bool { return a.Bridge.Stats().RemoteBadMessages == 2 })
	require.Equal(t, uint64(2), b.Bridge.Stats().BadMessages)
	eventually(t, "a logs it", func() bool {
		return containsAll(logA.String(), "a message from this node was refused", "not registered on node b")
	})

	// A reply of a type the requester's node lacks fails its future there.
	_, err = b.Actors.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*testpb.Ping); ok {
			c.Respond(&testpb.Unregistered{Text: "odd reply"})
		}
	}), "odd")
	require.NoError(t, err)
	require.NoError(t, b.Mailroom.RegisterTypes(&testpb.Unregistered{})) // b can send it; a cannot read it
	_, err = bridge.Result(a.Actors.Root.RequestFuture(actor.NewPID(bridge.NodeAddress("b"), "odd"), &testpb.Ping{}, futureTimeout))
	require.ErrorIs(t, err, mr.ErrBadMessage)
	require.Equal(t, mr.Executed, mr.Outcome(err))
	require.ErrorContains(t, err, "not registered on node a")

	// Not a protobuf message at all: refused before it leaves.
	_, err = bridge.Result(a.Actors.Root.RequestFuture(target, "a string", futureTimeout))
	require.ErrorIs(t, err, mr.ErrBadMessage)
	require.ErrorContains(t, err, "string is not a proto.Message")
}

func TestStopFailsPendingRequests(t *testing.T) {
	a, b := pair(t)
	_, err := b.Actors.Root.SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), "silent")
	require.NoError(t, err)
	silent := actor.NewPID(bridge.NodeAddress("b"), "silent")
	futures := make([]*actor.Future, 10)
	for i := range futures {
		futures[i] = a.Actors.Root.RequestFuture(silent, &testpb.Ping{}, futureTimeout)
	}
	eventually(t, "requests pending", func() bool { return a.Bridge.Stats().Pending == len(futures) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Bridge.Stop(ctx))
	for _, f := range futures {
		_, err := bridge.Result(f)
		require.ErrorIs(t, err, mr.ErrStopped)
		require.Equal(t, mr.MayHaveExecuted, mr.Outcome(err))
	}
	// After Stop, a request fails at once instead of hanging: through a
	// PID that knows the bridge, with ErrStopped; through a new one, as a
	// protoactor dead letter.
	_, err = bridge.Result(a.Actors.Root.RequestFuture(silent, &testpb.Ping{}, futureTimeout))
	require.ErrorIs(t, err, mr.ErrStopped)
	_, err = bridge.Result(a.Actors.Root.RequestFuture(actor.NewPID(bridge.NodeAddress("b"), "silent"), &testpb.Ping{}, futureTimeout))
	require.ErrorIs(t, err, actor.ErrDeadLetter)
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// Connect opens a session ahead of traffic, or says why it cannot.
func TestConnect(t *testing.T) {
	a, b := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Bridge.Connect(ctx, "b"))
	require.Equal(t, 1, a.Bridge.Stats().Peers)
	eventually(t, "b has the session too", func() bool { return b.Bridge.Stats().Peers == 1 })
	require.ErrorIs(t, a.Bridge.Connect(ctx, "nowhere"), mr.ErrUnreachable)
	require.ErrorContains(t, a.Bridge.Connect(ctx, "a"), "is this node")
}

// Stop, StopFuture and Poison reach a remote actor; a watcher hears it.
func TestRemoteStopAndPoison(t *testing.T) {
	a, b := pair(t)
	p, got := spawnProbe(t, a)
	for i, stop := range []func(pid *actor.PID){
		func(pid *actor.PID) { a.Actors.Root.Stop(pid) },
		func(pid *actor.PID) { a.Actors.Root.Poison(pid) },
		func(pid *actor.PID) { require.NoError(t, a.Actors.Root.StopFuture(pid).Wait()) },
	} {
		name := "victim" + strconv.Itoa(i)
		spawnEcho(t, b, name)
		pid := actor.NewPID(bridge.Address("b", b.Mailroom.Incarnation()), name)
		a.Actors.Root.Send(p, watchCmd{pid: pid})
		a.Actors.Root.Send(p, requestCmd{pid: pid, msg: &testpb.Ping{Text: name}})
		require.Equal(t, name, next(t, got).(*testpb.Pong).Text)
		stop(pid)
		term := next(t, got).(*actor.Terminated)
		require.Equal(t, name, term.Who.Id)
		require.Equal(t, actor.TerminatedReason_Stopped, term.Why)
		_, ok := b.Actors.ProcessRegistry.GetLocal(name)
		require.False(t, ok, "%s still registered on b", name)
	}
}

// An actor's Request that cannot be delivered is answered with the
// error, as a message.
func TestActorRequestFailureIsAMessage(t *testing.T) {
	a := startNode(t, "a")
	p, got := spawnProbe(t, a)
	a.Actors.Root.Send(p, requestCmd{pid: actor.NewPID(bridge.NodeAddress("nowhere"), "x"), msg: &testpb.Ping{}})
	err, ok := next(t, got).(error)
	require.True(t, ok)
	require.ErrorIs(t, err, mr.ErrUnreachable)
	require.ErrorContains(t, err, `request on node nowhere to protoactor "x"`)
}
