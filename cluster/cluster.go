package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/actor/pidpb"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/nodename"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Kind is a kind of grain this node hosts.
type Kind struct {
	// Name names the kind cluster-wide; it follows the node name rule
	// (1-128 letters, digits, '.', '_' or '-').
	Name string
	// Props makes the props of the activation of identity. Required.
	// The actor learns its identity from the argument, or with
	// IdentityOf.
	Props func(identity string) *actor.Props
	// IdleTimeout passivates an activation that has had no message for
	// that long: it receives actor.ReceiveTimeout (its last chance to
	// save its state), then it is stopped. 0: never for idleness; an
	// activation passivates itself any time by stopping
	// (Context.Stop(Context.Self())).
	IdleTimeout time.Duration
}

// Config configures the cluster layer of a node.
type Config struct {
	// Kinds are the kinds this node hosts. None: the node only sends to
	// grains hosted elsewhere.
	Kinds []Kind
	// Singletons are the singletons this node hosts (may run). None: the
	// node only sends to singletons hosted elsewhere.
	Singletons []Singleton
	// Leaser grants the owner leases that keep one activation per
	// identity. Default: the node's discovery provider when it is a
	// discovery.Leaser (Consul is), else none (Static): placement and
	// handover alone, see docs/CLUSTER.md for what that guarantees.
	Leaser discovery.Leaser
	// NoLeases runs without leases even when the provider grants them.
	NoLeases bool
	// CacheSize bounds the placement cache (identity -> activation PID).
	// Default 100,000 entries.
	CacheSize int
	// Logger: default the System's.
	Logger *slog.Logger
}

// DefaultCacheSize is Config.CacheSize's default.
const DefaultCacheSize = 100_000

// The function every node registers to activate a grain it owns.
const activateFn = "mailroom.cluster.activate"

// Codes of the refusals the activation function answers with; each is
// not executed (no activation started, no message handled).
const (
	// CodeNotOwner: the node asked is not the owner of the identity in
	// its own view. The sender re-resolves and retries once.
	CodeNotOwner = "not_owner"
	// CodeLeaseHeld: the owner lease is held by another incarnation (or in
	// its lock delay): the old activation has not ended yet. The sender
	// retries until its ctx ends.
	CodeLeaseHeld = "lease_held"
	// CodeNoKind: the node asked does not host the kind.
	CodeNoKind = "no_kind"
	// CodeStopping: the node's cluster layer is stopping or lost its
	// leases for good.
	CodeStopping = "cluster_stopping"
)

// ErrNoOwner: no live node hosts the kind (in this node's view). Not
// executed.
var ErrNoOwner = errors.New("cluster: no live node hosts the kind")

// Cluster is one node's cluster layer: it hosts the node's kinds and
// sends to grains anywhere. One per node; it stops with the System
// (before the remote layer drains: its activations stop and give their
// leases back first).
type Cluster struct {
	sys    *actor.System
	node   *remote.Node
	log    *slog.Logger
	leaser discovery.Leaser
	kinds  map[string]*Kind
	view   *view
	cache  *placementCache
	hosted *host
	keeper *keeper // nil without singletons
	topics *topics
	stats  counters

	stopping atomic.Bool
	wg       sync.WaitGroup // activation watchers
}

// Start attaches the cluster layer to node: it registers the activation
// function, announces the kinds (remote.Node.AnnounceKeys: discovery
// Meta and the links), and follows membership. Call it once per node,
// after remote.Start; ctx bounds the announcement.
func Start(ctx context.Context, node *remote.Node, cfg Config) (*Cluster, error) {
	sys := node.System()
	if cfg.Logger == nil {
		cfg.Logger = sys.Logger()
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.CacheSize < 0 {
		return nil, fmt.Errorf("cluster: Config.CacheSize is %d, want 0 (default) or more", cfg.CacheSize)
	}
	c := &Cluster{sys: sys, node: node, log: cfg.Logger.With("layer", "cluster"), kinds: map[string]*Kind{}}
	var names []string
	for i := range cfg.Kinds {
		k := cfg.Kinds[i]
		switch {
		case !nodename.Valid(k.Name):
			return nil, fmt.Errorf("cluster: Config.Kinds[%d].Name %q: want %s", i, k.Name, nodename.Rule)
		case c.kinds[k.Name] != nil:
			return nil, fmt.Errorf("cluster: Config.Kinds[%d]: kind %q listed twice", i, k.Name)
		case k.Props == nil:
			return nil, fmt.Errorf("cluster: Config.Kinds[%d] (%s): Props is nil", i, k.Name)
		case strings.HasPrefix(k.Name, singletonPrefix):
			return nil, fmt.Errorf("cluster: Config.Kinds[%d].Name %q: the prefix %q is the singletons'", i, k.Name, singletonPrefix)
		case k.IdleTimeout < 0:
			return nil, fmt.Errorf("cluster: Config.Kinds[%d] (%s): IdleTimeout is %v, want 0 (never) or more", i, k.Name, k.IdleTimeout)
		}
		c.kinds[k.Name] = &k
		names = append(names, k.Name)
	}
	singletons, err := c.singletonKinds(cfg.Singletons)
	if err != nil {
		return nil, err
	}
	names = append(names, singletons...)
	sort.Strings(names)
	if !cfg.NoLeases {
		c.leaser = cfg.Leaser
		if c.leaser == nil {
			c.leaser, _ = node.Config().Discovery.(discovery.Leaser)
		}
	}
	if err := sys.RegisterTypes(&wrapperspb.StringValue{}, &pidpb.PID{}); err != nil {
		return nil, err
	}
	c.view = newView(sys.Name(), sys.Incarnation(), names)
	c.cache = newPlacementCache(cfg.CacheSize)
	c.hosted = newHost(c)
	if len(singletons) > 0 {
		c.keeper = newKeeper(c)
	}
	if err := sys.Register(activateFn, c.handleActivate); err != nil {
		return nil, fmt.Errorf("cluster: start on node %s (already started?): %w", sys.Name(), err)
	}
	if err := c.registerInfo(); err != nil {
		return nil, fmt.Errorf("cluster: start on node %s: %w", sys.Name(), err)
	}
	if err := sys.Register(handoffFn, c.handleHandoff); err != nil {
		return nil, fmt.Errorf("cluster: start on node %s: %w", sys.Name(), err)
	}
	hooks := remote.Hooks{
		OnMember:   c.onMember,
		OnPeer:     func(p remote.PeerInfo) { c.onAnnounce(p, p.Draining, p.Meta) },
		OnAnnounce: c.onAnnounce,
		OnPeerGone: func(p remote.PeerInfo) { c.changed(c.view.remove(p.Node, p.Incarnation)) },
		OnForget:   c.view.forget,
	}
	if isStatic(node.Config().Discovery) {
		// No member incarnations but the links': a peer without a
		// link is out of placement until one is back.
		hooks.OnLinkDown = c.onLinkDown
	}
	node.AddHooks(hooks)
	if err := c.startTopics(); err != nil {
		return nil, err
	}
	// What discovery and the links said before the hooks were in: with
	// Consul a peer's kinds came in its MemberUp, which may have come
	// before this Start and may never come again.
	for _, m := range node.Members() {
		c.onMember(discovery.Event{Type: discovery.MemberUp, Member: m})
	}
	for _, p := range node.Peers() {
		c.onAnnounce(p, p.Draining, p.Meta)
	}
	sys.OnStop(c.stop)
	if err := node.AnnounceKeys(ctx, map[string]string{MetaKinds: strings.Join(names, ",")}); err != nil && len(names) > 0 {
		return nil, fmt.Errorf("cluster: announcing kinds %v: %w", names, err)
	}
	if c.keeper != nil {
		c.keeper.start(singletons)
	}
	return c, nil
}

func (c *Cluster) onMember(ev discovery.Event) {
	m := ev.Member
	switch ev.Type {
	case discovery.MemberUp, discovery.MemberUpdated:
		kinds, ok := parseKinds(m.Meta)
		c.changed(c.view.upsert(m.Node, m.Incarnation, kinds, ok))
	case discovery.MemberDown:
		c.changed(c.view.remove(m.Node, m.Incarnation))
	}
}

// isStatic: the provider is Static (the default) or DNS, whose members
// carry no incarnation: liveness comes from the links alone.
func isStatic(p discovery.Provider) bool {
	switch p.(type) {
	case nil, *discovery.Static, *discovery.DNS:
		return true
	}
	return false
}

func (c *Cluster) onLinkDown(p remote.PeerInfo, _ bool) {
	// Native links only: the hook fires for those, so a pool link still
	// counted here (it dies on its own, with no hook) would keep a peer
	// cut off in placement for good.
	for _, li := range c.node.Links() {
		if li.Node == p.Node && li.Incarnation == p.Incarnation && li.Native-li.Fenced > 0 {
			return
		}
	}
	c.changed(c.view.suspend(p.Node, p.Incarnation))
}

func (c *Cluster) onAnnounce(p remote.PeerInfo, _ bool, meta map[string]string) {
	kinds, ok := parseKinds(meta)
	c.changed(c.view.upsert(p.Node, p.Incarnation, kinds, ok))
}

// changed runs after the view changed: activations this node no longer
// owns are handed over (stopped here; the new owner activates on the
// next message).
func (c *Cluster) changed(yes bool) {
	if yes {
		c.hosted.handOver()
		if c.keeper != nil {
			c.keeper.viewChanged()
		}
	}
}

// stop is the System's stop hook: refuse activations, stop every
// activation and give its lease back, before the remote layer drains.
func (c *Cluster) stop(ctx context.Context) error {
	c.stopping.Store(true)
	if c.keeper != nil {
		c.keeper.stop()
	}
	c.topics.stop()
	err := c.hosted.stopAll(ctx)
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		err = errors.Join(err, fmt.Errorf("cluster: stop: activations still ending: %w", ctx.Err()))
	}
	return err
}

// Owner is the node that owns (kind, identity) in this node's view, and
// whether one hosts the kind.
func (c *Cluster) Owner(kind, identity string) (node string, ok bool) {
	o, ok := c.view.owner(kind, identity)
	return o.node, ok
}

// Hosts lists the nodes that host kind in this node's view, sorted.
func (c *Cluster) Hosts(kind string) []string {
	var out []string
	for _, h := range c.view.hosts(kind) {
		out = append(out, h.node)
	}
	return out
}

// Activations is the number of activations running on this node.
func (c *Cluster) Activations() int { return c.hosted.count() }

// handleActivate is the activation function: arg is "kind/identity".
func (c *Cluster) handleActivate(ctx context.Context, arg proto.Message) (proto.Message, error) {
	s, ok := arg.(*wrapperspb.StringValue)
	if !ok {
		return nil, actor.NotExecutedError(fmt.Errorf("%w: cluster activation takes a StringValue, got %T", actor.ErrBadMessage, arg))
	}
	kind, identity, ok := strings.Cut(s.Value, "/")
	if !ok {
		return nil, actor.NotExecutedError(fmt.Errorf("%w: cluster activation of %q: want kind/identity", actor.ErrBadMessage, s.Value))
	}
	if err := validIdentity(identity); err != nil {
		return nil, actor.NotExecutedError(fmt.Errorf("%w: %w", actor.ErrBadMessage, err))
	}
	pid, err := c.hosted.activate(ctx, kind, identity)
	if err != nil {
		return nil, err
	}
	return pidpb.From(pid), nil
}

// MaxIdentityLen bounds an identity.
const MaxIdentityLen = 256

// validIdentity: 1 to MaxIdentityLen bytes of printable ASCII without
// spaces (it is part of a lease key and an actor name).
func validIdentity(id string) error {
	if id == "" || len(id) > MaxIdentityLen {
		return fmt.Errorf("cluster: identity of %d bytes: want 1 to %d", len(id), MaxIdentityLen)
	}
	for i := 0; i < len(id); i++ {
		if b := id[i]; b < 0x21 || b > 0x7e {
			return fmt.Errorf("cluster: identity %q: byte %d is %#x, want printable ASCII without spaces", id, i, b)
		}
	}
	return nil
}

// refusal is a not-executed rejection with a code.
func refusal(code, format string, args ...any) error {
	return actor.NotExecutedError(actor.Reject(code, fmt.Sprintf(format, args...)))
}
