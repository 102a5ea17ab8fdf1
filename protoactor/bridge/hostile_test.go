package bridge_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	mr "github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/protoactor/bridge"
	"github.com/mailroom-go/mailroom/protoactor/internal/testpb"
	"github.com/mailroom-go/mailroom/protoactor/internal/wirepb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// hostile is a plain mailroom node that speaks the bridge's wire format
// by hand: it sends whatever a test crafts to b's endpoints and captures
// what b's bridge sends back.
type hostile struct {
	sys  *mr.System
	back chan *wirepb.Envelope // envelopes b sent to h's endpoint names
	self mr.PID                // an actor of h, named as its endpoint 0
}

func startHostile(t *testing.T, b *bridge.Node) *hostile {
	t.Helper()
	sys, err := mr.Start(mr.Config{Name: "h", Logger: mr.DiscardLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Stop(context.Background()) })
	require.NoError(t, sys.RegisterTypes(&wirepb.Envelope{}, &wirepb.Hello{}, &testpb.Ping{}))
	h := &hostile{sys: sys, back: make(chan *wirepb.Envelope, 100)}
	capture := func(c *mr.Context) {
		if env, ok := c.Message().(*wirepb.Envelope); ok {
			h.back <- env
		}
	}
	for k := range 8 {
		pid, err := sys.SpawnNamed(mr.PropsFromFunc(capture), "protoactor.v1."+strconv.Itoa(k))
		require.NoError(t, err)
		if k == 0 {
			h.self = pid
		}
	}
	node := startRemote(t, sys)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, node.Connect(ctx, "b", b.Addr()))
	return h
}

// hello sends a crafted hello to b's endpoint 0.
func (h *hostile) hello(hello *wirepb.Hello) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.sys.NewSender().RequestNamed(ctx, "b", "protoactor.v1.0", hello)
}

// send sends a crafted envelope to every endpoint of b (one of them is
// the target's; all must refuse alike).
func (h *hostile) send(env *wirepb.Envelope) {
	s := h.sys.NewSender()
	for k := range 8 {
		s.SendNamed("b", "protoactor.v1."+strconv.Itoa(k), env)
	}
}

func ping(t *testing.T, text string) []byte {
	b, err := proto.Marshal(&testpb.Ping{Text: text})
	require.NoError(t, err)
	return b
}

// Raw envelopes from a cookie holder that is no bridge: whatever they
// hold is refused, counted and bounded, and b keeps serving a.
func TestHostilePeer(t *testing.T) {
	a, b := pair(t, func(c *bridge.NodeConfig) { c.Bridge.MaxWatchesPerPeer = 10 })
	spawnEcho(t, b, "echo")
	echo := actor.NewPID(bridge.NodeAddress("b"), "echo")
	_, err := bridge.Result(a.Actors.Root.RequestFuture(echo, &testpb.Ping{}, futureTimeout))
	require.NoError(t, err) // a's session with b
	h := startHostile(t, b)
	pingType := string((&testpb.Ping{}).ProtoReflect().Descriptor().FullName())

	// No hello: nothing is delivered.
	h.send(&wirepb.Envelope{Target: "echo", Type: pingType, Payload: ping(t, "no hello")})
	eventually(t, "8 envelopes from an unknown peer counted", func() bool { return b.Bridge.Stats().UnknownPeer == 8 })

	// Bad hellos are refused, saying why.
	for _, c := range []struct {
		hello *wirepb.Hello
		want  string
	}{
		{&wirepb.Hello{Version: 9, Node: "h", Incarnation: h.sys.Incarnation(), Endpoint: h.self.ID}, "protocol version 9"},
		{&wirepb.Hello{Version: 1, Node: "x", Incarnation: h.sys.Incarnation(), Endpoint: h.self.ID}, "names node x"},
		{&wirepb.Hello{Version: 1, Node: "b", Incarnation: 7, Endpoint: h.self.ID}, "like this one"},
		{&wirepb.Hello{Version: 1, Node: "h"}, "without a node, incarnation or endpoint"},
	} {
		_, err := h.hello(c.hello)
		require.ErrorContains(t, err, c.want)
	}
	require.Equal(t, 1, b.Bridge.Stats().Peers, "only a's session")

	// A hello naming an endpoint that does not exist: mailroom reports it
	// gone at once, and the session closes.
	_, err = h.hello(&wirepb.Hello{Version: 1, Node: "h", Incarnation: h.sys.Incarnation(), Endpoint: 1 << 40})
	require.NoError(t, err)
	eventually(t, "the bogus session closes", func() bool { return b.Bridge.Stats().Peers == 1 })

	// A proper hello: now its envelopes are read, and refused one by one.
	ack, err := h.hello(&wirepb.Hello{Version: 1, Node: "h", Incarnation: h.sys.Incarnation(), Endpoint: h.self.ID})
	require.NoError(t, err)
	require.Equal(t, b.Mailroom.Incarnation(), ack.(*wirepb.Hello).Incarnation)
	require.Equal(t, 2, b.Bridge.Stats().Peers)
	before := b.Bridge.Stats()
	h.send(&wirepb.Envelope{Kind: 42, Target: "echo"})                                          // unknown kind
	h.send(&wirepb.Envelope{Target: "echo", Type: "no.such.Type", Payload: []byte{1, 2, 3}})    // unregistered
	h.send(&wirepb.Envelope{Target: "echo", Type: pingType, Payload: []byte{0xff, 0xff, 0xff}}) // undecodable
	h.send(&wirepb.Envelope{Kind: wirepb.Kind_KIND_SYSTEM, Target: "echo", Type: pingType})     // not a system type
	h.send(&wirepb.Envelope{Kind: wirepb.Kind_KIND_SYSTEM, Target: "echo", Type: "actor.Watch"})
	eventually(t, "every bad envelope counted", func() bool { return b.Bridge.Stats().BadMessages-before.BadMessages == 5*8 })
	// The unregistered and undecodable plain sends were reported back.
	for range 2 * 8 {
		env := <-h.back
		require.Equal(t, wirepb.Kind_KIND_FAILURE, env.Kind)
		require.Contains(t, env.FailureText, "node b")
	}

	// A stale incarnation is a dead letter there.
	before = b.Bridge.Stats()
	h.send(&wirepb.Envelope{Target: "echo", TargetIncarnation: b.Mailroom.Incarnation() ^ 1, Type: pingType, Payload: ping(t, "stale")})
	eventually(t, "stale envelopes dropped", func() bool { return b.Bridge.Stats().Dropped-before.Dropped == 8 })

	// Watches beyond MaxWatchesPerPeer are refused.
	for i := range 20 {
		w, err := proto.Marshal(&actor.Watch{Watcher: actor.NewPID(bridge.Address("h", h.sys.Incarnation()), "w"+strconv.Itoa(i))})
		require.NoError(t, err)
		h.sys.NewSender().SendNamed("b", "protoactor.v1.0", &wirepb.Envelope{Kind: wirepb.Kind_KIND_SYSTEM, Target: "echo", Type: "actor.Watch", Payload: w})
	}
	eventually(t, "10 watches refused", func() bool { return b.Bridge.Stats().WatchesRefused == 10 })

	// Only plain sends got through to echo: none (the stale ones were
	// refused). b still serves a.
	res, err := bridge.Result(a.Actors.Root.RequestFuture(echo, &testpb.Ping{Text: "count?"}, futureTimeout))
	require.NoError(t, err)
	require.Equal(t, int64(0), res.(*testpb.Pong).N)

	// h goes: its session and its watches are released.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, h.sys.Stop(ctx))
	eventually(t, "h's session released", func() bool { return b.Bridge.Stats().Peers == 1 })
	res, err = bridge.Result(a.Actors.Root.RequestFuture(echo, &testpb.Ping{Text: "still here"}, futureTimeout))
	require.NoError(t, err)
	require.Equal(t, "still here", res.(*testpb.Pong).Text)
}
