package remote

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// logicalClock is the time of the nodes started on it (startNodeAt). It
// moves only when the test advances it, and each advance runs one
// liveness step (Node.tick: heartbeats, silent and idle links closed,
// sweeps, names forgotten) on each of its running nodes, in the order
// they started. No liveness loop runs on those nodes: a link is silent
// for three intervals because the test advanced the clock by three
// intervals, whatever the load of the machine. The network is real; a
// test that wants a heartbeat answered before it moves on waits for it
// (the clock does not wait for the network).
//
// A clock nobody advances is a node on which no link ever goes silent or
// idle and nothing is forgotten.
type logicalClock struct {
	mu    sync.Mutex // serialises advances: a node's steps run one at a time, as its loop's do
	ns    atomic.Int64
	nodes []*Node // under mu
}

// newLogicalClock is a clock that starts at the wall clock's now.
func newLogicalClock() *logicalClock {
	c := &logicalClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

// advance moves the clock by d and runs a liveness step at the new time
// on each of its nodes that has not stopped. It returns the new time.
func (c *logicalClock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Unix(0, c.ns.Add(int64(d)))
	for _, n := range c.nodes {
		select {
		case <-n.stop:
			continue
		default:
		}
		n.live.tick(now)
	}
	return now
}

// startNodeAt starts an in-process node with the echo function, on clock
// c (nil: the wall clock, and its liveness loop).
func startNodeAt(t *testing.T, name string, cfg Config, c *logicalClock) (*actor.System, *Node, *logSink) {
	t.Helper()
	logs := &logSink{}
	sys, err := actor.Start(actor.Config{Name: name, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	require.NoError(t, sys.RegisterTypes(&testpb.Echo{}))
	require.NoError(t, sys.Register("echo", func(_ context.Context, arg proto.Message) (proto.Message, error) {
		return &testpb.Echo{Text: "echo " + arg.(*testpb.Echo).Text}, nil
	}))
	if cfg.Cookie == "" {
		cfg.Cookie = testCookie
	}
	var logical *atomic.Int64
	if c != nil {
		logical = &c.ns
	}
	n, err := start(context.Background(), sys, cfg, logical)
	require.NoError(t, err)
	if c != nil {
		c.mu.Lock()
		c.nodes = append(c.nodes, n)
		c.mu.Unlock()
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, sys.Stop(ctx))
	})
	return sys, n, logs
}

// onlyLink waits until n has exactly one link with the current
// incarnation of node, and returns it.
func onlyLink(t *testing.T, n *Node, node string) *link {
	t.Helper()
	var l *link
	waitFor(t, "one link with "+node, func() bool {
		p := (*transport)(n).current(node)
		if p == nil {
			return false
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		l = nil
		for m := range p.links {
			l = m
		}
		return len(p.links) == 1
	})
	return l
}
