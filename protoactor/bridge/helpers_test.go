package bridge_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	mr "github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/protoactor/bridge"
	"github.com/mailroom-go/mailroom/protoactor/internal/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) {
	maybeRunChild()
	goleak.VerifyTestMain(m,
		// protoactor's dead-letter log throttle holds a goroutine for its
		// interval (1 s) after a dead letter: not ours, and it ends.
		// Its name depends on inlining.
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewThrottle.func1"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	)
}

// cookie is every test node's cookie (16 bytes or more).
const cookie = "bridge-test-cookie-0123456789"

// testTypes are registered on every test node; testpb.Unregistered never.
func testTypes() []proto.Message {
	return []proto.Message{&testpb.Ping{}, &testpb.Pong{}, &testpb.Sleep{}}
}

// futureTimeout is every test future's timeout: long enough that a test
// passing because a future timed out would fail its own time bounds.
const futureTimeout = 30 * time.Second

// logBuffer is a concurrency-safe log sink tests assert on.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startNode starts a bridged node stopped at the end of the test.
func startNode(t testing.TB, name string, opts ...func(*bridge.NodeConfig)) *bridge.Node {
	t.Helper()
	cfg := bridge.NodeConfig{
		Name:   name,
		Remote: remote.Config{Cookie: cookie},
		Types:  testTypes(),
		Logger: slog.New(slog.NewTextHandler(&logBuffer{}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	for _, o := range opts {
		o(&cfg)
	}
	n, err := bridge.StartNode(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, n.Stop(ctx))
	})
	return n
}

// withLog sends a node's logs (Debug and up) to buf.
func withLog(buf *logBuffer) func(*bridge.NodeConfig) {
	return func(c *bridge.NodeConfig) {
		c.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

// link makes a and b reachable from each other.
func link(t testing.TB, a, b *bridge.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Remote.Connect(ctx, b.Mailroom.Name(), b.Addr()))
	require.NoError(t, b.Remote.Connect(ctx, a.Mailroom.Name(), a.Addr()))
}

// pair starts two linked nodes "a" and "b".
func pair(t testing.TB, opts ...func(*bridge.NodeConfig)) (a, b *bridge.Node) {
	a, b = startNode(t, "a", opts...), startNode(t, "b", opts...)
	link(t, a, b)
	return a, b
}

// echo answers a Ping with a Pong carrying the same text and n, counts
// the Pings it was sent without a request, and answers a Ping "count?"
// with that count. A Sleep it holds without answering.
type echo struct{ sent int64 }

func (e *echo) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *testpb.Ping:
		switch {
		case m.Text == "count?":
			c.Respond(&testpb.Pong{Text: "count", N: e.sent})
		case c.Sender() != nil:
			c.Respond(&testpb.Pong{Text: m.Text, N: m.N})
		default:
			e.sent++
		}
	case *testpb.Unregistered:
		c.Respond(&testpb.Pong{Text: "should not get here"})
	}
}

func spawnEcho(t testing.TB, n *bridge.Node, name string) *actor.PID {
	t.Helper()
	pid, err := n.Actors.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &echo{} }), name)
	require.NoError(t, err)
	return pid
}

// probe is a protoactor actor that reports what it receives on a channel
// and runs commands sent to it (watch, request).
type probe struct{ got chan any }

type watchCmd struct{ pid *actor.PID }

type requestCmd struct {
	pid *actor.PID
	msg proto.Message
}

func (p *probe) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case watchCmd:
		c.Watch(m.pid)
	case requestCmd:
		c.Request(m.pid, m.msg)
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default:
		p.got <- m
	}
}

func spawnProbe(t testing.TB, n *bridge.Node) (*actor.PID, chan any) {
	t.Helper()
	ch := make(chan any, 1024)
	pid := n.Actors.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &probe{got: ch} }))
	return pid, ch
}

// next waits for the probe's next message.
func next(t testing.TB, ch chan any) any {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(20 * time.Second):
		t.Fatal("probe: nothing received within 20s")
		return nil
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after 20s waiting for %s", what)
		case <-tick.C:
		}
	}
}

// startRemote starts mailroom's remote on sys (a node without a bridge).
func startRemote(t testing.TB, sys *mr.System) *remote.Node {
	t.Helper()
	n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: cookie})
	require.NoError(t, err)
	return n
}

// quietActorSystem is a protoactor system that logs nothing.
func quietActorSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return mr.DiscardLogger() }))
}
