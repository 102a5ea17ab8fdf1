package mailroomtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
)

// ClusterConfig configures StartCluster. Zero fields take the documented
// defaults.
type ClusterConfig struct {
	// Nodes is how many nodes to start, named "n1", "n2", ... Default 3.
	Nodes int
	// Clock, when set, is every node's actor.Config.Clock (a FakeClock
	// drives all their timers). Default: the wall clock.
	Clock actor.Clock
	// Logger is every node's logger. Default: warnings and errors to the
	// test's log (t.Log).
	Logger *slog.Logger
	// Types are registered on every node (System.RegisterTypes): the
	// protobuf messages its actors send and receive across nodes.
	Types []proto.Message
	// Configure, when set, is called for every node before it starts,
	// its restarts included, to adjust its actor and remote
	// configuration (types to register, heartbeat interval, pool size).
	// The testkit sets Name, Clock, Logger, Cookie, Network, Listen and
	// Seeds before it; Configure must not change Network or Listen.
	Configure func(name string, sys *actor.Config, rc *remote.Config)
}

// Cluster is N nodes, each an actor.System with its remote layer, in one
// process, linked over an in-memory network the test can break:
// Partition and Heal, Delay, Kill and Restart. Every node dials its peers
// through the cluster's network, so a fault holds for the links that
// exist and for every dial after it.
//
// The methods are safe to call from any goroutine; a misuse such as an
// unknown node name is an error.
type Cluster struct {
	cfg ClusterConfig
	f   *faults

	mu    sync.Mutex // protects following
	nodes map[string]*Node
	names []string
}

// Node is one node of a Cluster. A restarted node is a new Node value
// (a new incarnation); the old one's System stays stopped.
type Node struct {
	name string
	addr string
	sys  *actor.System
	rn   *remote.Node
}

// Name is the node's name ("n1", ...).
func (n *Node) Name() string { return n.name }

// System is the node's actor system.
func (n *Node) System() *actor.System { return n.sys }

// Remote is the node's remote layer.
func (n *Node) Remote() *remote.Node { return n.rn }

// cookie is the cluster's shared cookie: the network is the test's own,
// so a fixed one does.
const cookie = "mailroomtest-cookie-0123456789"

// StartCluster is NewCluster for a test: it fails the test when the
// cluster does not start, logs the nodes' warnings to the test's log
// unless cfg.Logger is set, and closes the cluster when the test ends.
func StartCluster(t testing.TB, cfg ClusterConfig) *Cluster {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	c, err := NewCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// NewCluster starts cfg.Nodes nodes and links every pair before it
// returns. On an error the nodes it started are stopped. Close stops
// them. Without cfg.Logger the nodes log nothing.
func NewCluster(cfg ClusterConfig) (*Cluster, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.Nodes < 0 {
		return nil, fmt.Errorf("mailroomtest: ClusterConfig.Nodes %d: must be at least 1", cfg.Nodes)
	}
	if cfg.Logger == nil {
		cfg.Logger = actor.DiscardLogger()
	}
	c := &Cluster{cfg: cfg, f: newFaults(), nodes: make(map[string]*Node)}
	for i := range cfg.Nodes {
		name := fmt.Sprintf("n%d", i+1)
		c.names = append(c.names, name)
		c.f.addrs[c.addr(name)] = name // known before any node dials it
	}
	for _, name := range c.names {
		if _, err := c.start(name); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	for i, a := range c.names {
		for _, b := range c.names[i+1:] {
			if err := c.connect(a, b); err != nil {
				return nil, errors.Join(err, c.Close())
			}
		}
	}
	return c, nil
}

// addr is a node's listen address on the cluster's network.
func (c *Cluster) addr(name string) string { return name + ":7000" }

func (c *Cluster) start(name string) (*Node, error) {
	ac := actor.Config{Name: name, Clock: c.cfg.Clock, Logger: c.cfg.Logger}
	var seeds []string
	for _, other := range c.names {
		if other != name {
			seeds = append(seeds, other+"="+c.addr(other))
		}
	}
	rc := remote.Config{Cookie: cookie, Network: &nodeNet{f: c.f, name: name}, Listen: c.addr(name), Seeds: seeds}
	if c.cfg.Configure != nil {
		c.cfg.Configure(name, &ac, &rc)
	}
	sys, err := actor.Start(ac)
	if err != nil {
		return nil, fmt.Errorf("mailroomtest: start %s: %w", name, err)
	}
	if err := sys.RegisterTypes(c.cfg.Types...); err != nil {
		return nil, errors.Join(fmt.Errorf("mailroomtest: start %s: %w", name, err), sys.Stop(context.Background()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rn, err := remote.Start(ctx, sys, rc)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("mailroomtest: start %s's remote layer: %w", name, err), sys.Stop(ctx))
	}
	n := &Node{name: name, addr: c.addr(name), sys: sys, rn: rn}
	c.mu.Lock()
	c.nodes[name] = n
	c.mu.Unlock()
	return n, nil
}

// connect links a to b, waiting at most 10 s.
func (c *Cluster) connect(a, b string) error {
	n := c.Node(a)
	if n == nil {
		return fmt.Errorf("mailroomtest: link %s to %s: %s is not running", a, b, a)
	}
	// A dial the node's own seed keeper made before b listened may be
	// refused and shared with this Connect: dial again until the deadline.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := n.rn.Connect(ctx, b, c.addr(b))
		cancel()
		if err == nil {
			return nil
		}
		c.f.mu.Lock()
		cut := c.f.cutLocked(a, b)
		c.f.mu.Unlock()
		if cut || time.Now().After(deadline) {
			return fmt.Errorf("mailroomtest: link %s to %s: %w", a, b, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Node returns the running node name, nil if there is none.
func (c *Cluster) Node(name string) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[name]
}

// Nodes returns the running nodes, in name order.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Node
	for _, name := range c.names {
		if n := c.nodes[name]; n != nil {
			out = append(out, n)
		}
	}
	return out
}

func (c *Cluster) known(names ...string) error {
	for _, n := range names {
		if !slices.Contains(c.names, n) {
			return fmt.Errorf("mailroomtest: no node %q in the cluster %v", n, c.names)
		}
	}
	return nil
}

// Partition splits the cluster: each group given is a side of its own,
// and the nodes in no group form one more side. Links between sides are
// closed at once (each end sees its link fail, as after a reset; its
// pending requests fail as may-have-executed, its watches fire with
// actor.ErrNodeDown) and dials between sides are refused until Heal. A
// request sent just after it may still meet a link that is failing
// (may have executed) rather than a refused dial (not executed). A
// Partition replaces the one before it.
func (c *Cluster) Partition(groups ...[]string) error {
	for _, g := range groups {
		if err := c.known(g...); err != nil {
			return err
		}
	}
	c.f.mu.Lock()
	clear(c.f.side)
	for i, g := range groups {
		for _, n := range g {
			c.f.side[n] = i + 1
		}
	}
	c.f.mu.Unlock()
	c.f.closeWhere(c.f.cutLocked)
	return nil
}

// Heal ends the partition: dials between sides succeed again. Links come
// back as the nodes redial (each keeps redialling its seeds, with a
// backoff up to 5 s) or on their next Send or Request to a peer; Link
// relinks two nodes at once.
func (c *Cluster) Heal() {
	c.f.mu.Lock()
	clear(c.f.side)
	c.f.mu.Unlock()
}

// Link links node a to node b now, waiting at most 10 s: after Heal or
// Restart, when a test must not wait for the redial's backoff.
func (c *Cluster) Link(a, b string) error {
	if err := c.known(a, b); err != nil {
		return err
	}
	return c.connect(a, b)
}

// Delay makes every link between a and b wait d in each direction for
// each write it carries (0 ends the delay). It holds for the links that
// exist and later ones. A delay beyond the nodes' heartbeat window
// (remote.Config.Liveness.HeartbeatInterval x HeartbeatMisses) makes them judge
// each other dead.
func (c *Cluster) Delay(a, b string, d time.Duration) error {
	if err := c.known(a, b); err != nil {
		return err
	}
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if d <= 0 {
		delete(c.f.delay, pair(a, b))
		return nil
	}
	c.f.delay[pair(a, b)] = d
	return nil
}

// Kill ends node name abruptly: its links are cut before it can say
// goodbye, so its peers see it fail rather than leave, and then its
// System is stopped (its actors end, as in a crash of the process). It
// returns once the node is stopped.
func (c *Cluster) Kill(name string) error {
	n := c.Node(name)
	if n == nil {
		return fmt.Errorf("mailroomtest: kill %s: not running", name)
	}
	c.f.mu.Lock()
	c.f.down[name] = true
	c.f.mu.Unlock()
	c.f.closeWhere(func(a, b string) bool { return a == name || b == name })
	c.mu.Lock()
	delete(c.nodes, name)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := n.sys.Stop(ctx); err != nil {
		return fmt.Errorf("mailroomtest: kill %s: %w", name, err)
	}
	return nil
}

// Restart starts node name again after Kill, as a new incarnation on the
// same address, and links it to every running node it is not
// partitioned from. Its peers learn the new incarnation from the links:
// PIDs of the old one stay dead.
func (c *Cluster) Restart(name string) (*Node, error) {
	if err := c.known(name); err != nil {
		return nil, err
	}
	if c.Node(name) != nil {
		return nil, fmt.Errorf("mailroomtest: restart %s: still running (Kill it first)", name)
	}
	c.f.mu.Lock()
	delete(c.f.down, name)
	c.f.mu.Unlock()
	n, err := c.start(name)
	if err != nil {
		return nil, err
	}
	for _, other := range c.Nodes() {
		c.f.mu.Lock()
		cut := c.f.cutLocked(name, other.name)
		c.f.mu.Unlock()
		if other.name != name && !cut {
			if err := c.connect(name, other.name); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// Close stops the running nodes, all at once, and returns when they
// are stopped. A cluster is not used after Close.
func (c *Cluster) Close() error {
	nodes := c.Nodes()
	c.mu.Lock()
	clear(c.nodes)
	c.mu.Unlock()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := n.sys.Stop(ctx); err != nil {
				errs[i] = fmt.Errorf("mailroomtest: stop %s: %w", n.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// testWriter writes log lines to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}
