package services

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/idempotency"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Services is one node's services layer: it provides services, calls
// them anywhere in the cluster, and takes part in graceful drains. One
// per node; it stops with the System.
type Services struct {
	sys   *actor.System
	node  *remote.Node
	cfg   Config
	log   *slog.Logger
	clock Clock
	reg   *registry
	stats *stats
	acks  *ackBook

	life    context.Context // ends when the remote layer has closed
	cancel  context.CancelFunc
	aborted atomic.Bool // Start failed: the hooks it attached do nothing

	annMu sync.Mutex // serialises publish: announcements go out in seq order

	mu       sync.Mutex // protects following
	provided []*provided
	seq      uint64
	draining bool
	closed   bool

	wg sync.WaitGroup // drain-ack senders

	testBeforeCall func() // tests: runs before each attempt's call
}

// provided is a service this node provides.
type provided struct {
	svc Service
	rec *record
}

// Start attaches the services layer to node (and its System). It
// announces that this node runs services, learns what the other nodes
// provide from discovery and their links, and from now on takes part in
// graceful drains. ctx bounds the announcement, which waits for
// discovery (an agent's answer, for Consul). Call it once per node, after
// remote.Start. On an error nothing of the layer is left running (an
// announcement the links already carried is withdrawn) and Start may be
// called again.
func Start(ctx context.Context, node *remote.Node, cfg Config) (*Services, error) {
	sys := node.System()
	cfg, err := cfg.withDefaults(sys.Logger())
	if err != nil {
		return nil, err
	}
	if err := sys.RegisterTypes(&wrapperspb.StringValue{}); err != nil {
		return nil, err
	}
	s := &Services{
		sys: sys, node: node, cfg: cfg, log: cfg.Logger.With("layer", "services"),
		clock: cfg.Clock, reg: newRegistry(), stats: newStats(), acks: newAckBook(),
	}
	s.life, s.cancel = context.WithCancel(context.Background())
	if _, err := sys.SpawnNamed(actor.PropsFromFunc(s.receiveAck), ackActor); err != nil {
		s.cancel()
		if errors.Is(err, actor.ErrNameTaken) {
			return nil, fmt.Errorf("services: already started on node %s", sys.Name())
		}
		return nil, fmt.Errorf("services: start: %w", err)
	}
	s.reg.setLocal(sys.Name(), sys.Incarnation(), nil)
	// The hooks come first: what discovery reports while the announcement
	// waits for it must not be missed. A failed Start leaves them attached
	// (the remote layer cannot remove hooks) but inert: abort.
	node.AddHooks(remote.Hooks{
		OnMember:   s.onMember,
		OnPeer:     func(p remote.PeerInfo) { s.onAnnounce(p, p.Draining, p.Meta) },
		OnAnnounce: s.onAnnounce,
		OnPeerGone: s.onPeerGone,
		OnClose:    s.close,
	})
	// What discovery and the links reported before the hooks were in:
	// a provider's members can come before this Start (Kubernetes lists
	// them as it starts), and with no link to them nothing reports them
	// again until their metadata changes.
	for _, m := range node.Members() {
		s.onMember(discovery.Event{Type: discovery.MemberUp, Member: m})
	}
	for _, p := range node.Peers() {
		s.onAnnounce(p, p.Draining, p.Meta)
	}
	if err := s.publish(ctx); err != nil {
		s.abort()
		return nil, fmt.Errorf("services: start: %w", err)
	}
	sys.OnStop(s.stopHook)
	return s, nil
}

// abort undoes a Start whose announcement failed: its hooks go inert
// (aborted), it withdraws what the links carried (withdrawnMeta), and it
// stops the ack actor, releasing its name for the next Start.
func (s *Services) abort() {
	s.aborted.Store(true)
	s.close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.node.Announce(ctx, withdrawnMeta()); err != nil {
		s.log.Warn("services: start failed; withdrawing its announcement from discovery failed too", "err", err)
	}
	if pid, ok := s.sys.Lookup(ackActor); ok {
		if err := s.sys.StopActorWait(ctx, pid); err != nil {
			s.log.Warn("services: start failed; its ack actor did not stop", "err", err)
		}
	}
}

// System is the node's actor system.
func (s *Services) System() *actor.System { return s.sys }

func (s *Services) onMember(ev discovery.Event) {
	m := ev.Member
	if m.Node == s.sys.Name() || s.aborted.Load() {
		return
	}
	switch ev.Type {
	case discovery.MemberUp, discovery.MemberUpdated:
		s.apply(m.Node, m.Incarnation, m.Draining, m.Meta)
	case discovery.MemberDown:
		s.reg.gone(m.Node, m.Incarnation)
		s.acks.poke()
	}
}

func (s *Services) onAnnounce(p remote.PeerInfo, draining bool, meta map[string]string) {
	if s.aborted.Load() {
		return
	}
	s.apply(p.Node, p.Incarnation, draining, meta)
	s.acks.poke() // a peer may have become a services node
}

func (s *Services) onPeerGone(p remote.PeerInfo) {
	if s.aborted.Load() {
		return
	}
	s.reg.gone(p.Node, p.Incarnation)
	s.acks.poke()
}

// apply feeds an announcement to the registry and, when it starts a
// provider's drain, schedules this node's drain ack to it.
func (s *Services) apply(node string, inc uint64, draining bool, meta map[string]string) {
	e, errs := s.reg.update(node, inc, draining, meta)
	for _, err := range errs {
		s.log.Warn("ignoring a service announcement", "node", node, "err", err)
	}
	if e != nil && e.marker && len(e.recs) > 0 {
		s.sendAckWhenIdle(e) // only providers wait for acks
	}
}

// Provide makes svc callable by every node of the cluster: its functions
// are registered on this node and the service is announced (discovery
// meta and every link). A node provides one version per name and major.
func (s *Services) Provide(ctx context.Context, svc Service) error {
	if err := svc.validate(); err != nil {
		return err
	}
	svc.Functions = append([]Function(nil), svc.Functions...)
	p := &provided{svc: svc, rec: svc.record()}
	s.mu.Lock()
	if s.draining || s.closed {
		s.mu.Unlock()
		return fmt.Errorf("services: provide %s@%v: node %s is stopping: %w", svc.Name, svc.Version, s.sys.Name(), actor.ErrDraining)
	}
	recs := []*record{}
	for _, q := range s.provided {
		if q.svc.Name == svc.Name && q.svc.Version.Major == svc.Version.Major {
			s.mu.Unlock()
			return fmt.Errorf("services: provide %s@%v: this node already provides %s@%v; Withdraw it first", svc.Name, svc.Version, q.svc.Name, q.svc.Version)
		}
		recs = append(recs, q.rec)
	}
	recs = append(recs, p.rec)
	if _, err := encodeMeta(recs, 0); err != nil {
		s.mu.Unlock()
		return err
	}
	var done []string
	for _, f := range svc.Functions {
		if f.Guard != nil {
			if err := idempotency.Serve(s.sys, f.Guard); err != nil {
				for _, n := range done {
					s.sys.Unregister(n)
				}
				s.mu.Unlock()
				return fmt.Errorf("services: provide %s@%v: function %s: %w", svc.Name, svc.Version, f.Name, err)
			}
			f.Handler = idempotency.Handler(f.Guard, f.Handler)
		}
		name := regName(svc.Name, svc.Version.Major, f.Name)
		if err := s.sys.Register(name, s.wrap(&svc, f)); err != nil {
			for _, n := range done {
				s.sys.Unregister(n)
			}
			s.mu.Unlock()
			return fmt.Errorf("services: provide %s@%v: %w", svc.Name, svc.Version, err)
		}
		done = append(done, name)
	}
	s.provided = append(s.provided, p)
	s.reg.setLocal(s.sys.Name(), s.sys.Incarnation(), recs)
	s.mu.Unlock()
	if err := s.publish(ctx); err != nil {
		return fmt.Errorf("services: provide %s@%v: %w", svc.Name, svc.Version, err)
	}
	return nil
}

// Withdraw stops providing name at major: the announcement goes first,
// then the functions are unregistered. Calls already running finish;
// a call that still reaches this node fails with actor.ErrNoFunction
// (not executed) and is retried elsewhere.
func (s *Services) Withdraw(ctx context.Context, name string, major int) error {
	s.mu.Lock()
	var gone *provided
	var keep []*provided
	var recs []*record
	for _, q := range s.provided {
		if q.svc.Name == name && q.svc.Version.Major == major {
			gone = q
			continue
		}
		keep = append(keep, q)
		recs = append(recs, q.rec)
	}
	if gone == nil {
		s.mu.Unlock()
		return fmt.Errorf("services: withdraw %s@%d: not provided here", name, major)
	}
	s.provided = keep
	s.reg.setLocal(s.sys.Name(), s.sys.Incarnation(), recs)
	s.mu.Unlock()
	err := s.publish(ctx)
	for _, f := range gone.svc.Functions {
		s.sys.Unregister(regName(name, major, f.Name))
	}
	return err
}

// publish announces what this node provides now.
func (s *Services) publish(ctx context.Context) error {
	s.annMu.Lock()
	defer s.annMu.Unlock()
	s.mu.Lock()
	s.seq++
	recs := make([]*record, len(s.provided))
	for i, p := range s.provided {
		recs[i] = p.rec
	}
	meta, err := encodeMeta(recs, s.seq)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := s.node.Announce(ctx, meta); err != nil {
		return fmt.Errorf("announced over links, but not through discovery: %w", err)
	}
	return nil
}

// wrap is the registered handler of f: it counts the call in flight and
// bounds it by the contract's deadline.
func (s *Services) wrap(svc *Service, f Function) actor.Handler {
	d := f.Deadline
	if d == 0 {
		d = svc.Defaults.Deadline
	}
	ctr := s.stats.inflight(svc.Name, svc.Version.String(), f.Name)
	h := f.Handler
	return func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		ctr.Add(1)
		defer ctr.Add(-1)
		if d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		return h(ctx, arg)
	}
}

// ProviderInfo is one provider of a service as this node sees it.
type ProviderInfo struct {
	Node        string
	Incarnation uint64
	Version     Version
	Draining    bool
	Local       bool
	Functions   []string
}

// Providers lists the providers of service this node knows, sorted by
// node name.
func (s *Services) Providers(service string) []ProviderInfo {
	s.reg.mu.Lock()
	defer s.reg.mu.Unlock()
	var out []ProviderInfo
	for _, e := range s.reg.entries {
		for _, r := range e.recs {
			if r.Name != service {
				continue
			}
			pi := ProviderInfo{Node: e.node, Incarnation: e.inc, Version: r.Version, Draining: e.draining, Local: e.local}
			for _, f := range r.Fns {
				pi.Functions = append(pi.Functions, f.Name)
			}
			out = append(out, pi)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].Version.Less(out[j].Version)
	})
	return out
}

func (p ProviderInfo) String() string {
	s := fmt.Sprintf("%s on %s (incarnation %s)", p.Version, p.Node, actor.FormatIncarnation(p.Incarnation))
	if p.Draining {
		s += " draining"
	}
	return s
}
