package proxypool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/hooks"
	"github.com/mailroom-go/mailroom/internal/poolpath"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/mailroom-go/mailroom/supervisor"
)

// Manager runs this node's proxy pools: a supervisor with one connection
// master per peer node, each building a pool of proxies toward the peer's
// current incarnation.
type Manager struct {
	node  *remote.Node
	host  poolpath.Host // the node as the pooled path sees it
	sys   *actor.System
	cfg   Config
	log   *slog.Logger
	sup   actor.PID
	batch atomic.Int64

	mu      sync.Mutex // protects following
	conns   map[string]*Info
	auto    map[string]bool           // masters started by the manager, not by StartConnection
	dead    map[string]*atomic.Uint64 // dead letters of queued pool traffic, by node
	closing bool
	goDone  bool // OnClose began waiting for wg: no more goroutines
	// links is the pool links reserved for each master under
	// MaxPoolLinks (limits.go); capLogged when a refusal was last logged,
	// by peer.
	links     map[string]int
	capLogged map[string]time.Time
	// idle follows the traffic of each lazily built pool (limits.go).
	idle map[string]*idleState
	sum  summaryCounts

	onLink func(poolpath.Link) // test hook: sees every pool link built

	ctx    context.Context // cancelled at stop: ends pool dials
	cancel context.CancelFunc
	wg     sync.WaitGroup // dials, link watchers, auto-starts
}

// hostOf is how a Manager reaches its node's pool hooks, which
// remote.Node does not export (internal/hooks.PoolHost, set by remote's
// init, which has run: this package imports remote).
var hostOf = hooks.PoolHost.(func(*remote.Node) poolpath.Host)

// Outgoing is a message a proxy pool dropped: the dead letter's Message
// when a send or cast queued in a proxy is never written (its link
// closed, its proxy ended). Its payload is gone with its batch.
type Outgoing struct {
	node, op string
}

// Node is the peer node the message was for.
func (o *Outgoing) Node() string { return o.node }

// Op is what it was: "send" or "cast".
func (o *Outgoing) Op() string { return o.op }

// dropped publishes a dead letter for a send or cast to node that a
// proxy's queue dropped (poolpath.Options.Dropped).
func (m *Manager) dropped(node string) func(op string, reason error) {
	return func(op string, reason error) {
		actorhooks.DeadLetter(m.sys, actor.PID{Node: node}, actor.PID{}, &Outgoing{node: node, op: op}, reason)
	}
}

// SupervisorName is the registered name of the proxy pool supervisor.
const SupervisorName = "mailroom.proxypool"

// Start runs the proxy pools of node. By default a pool toward a peer is
// built on the first message to it and torn down when idle (Config.Eager
// builds one toward every peer that comes up; ManualConnect none).
// System.Stop stops it.
func Start(node *remote.Node, cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	sys := node.System()
	m := &Manager{
		node: node, host: hostOf(node), sys: sys, cfg: cfg, log: sys.Logger().With("layer", "proxypool"),
		conns: make(map[string]*Info),
		auto:  make(map[string]bool),
		dead:  make(map[string]*atomic.Uint64),

		links:     make(map[string]int),
		capLogged: make(map[string]time.Time),
		idle:      make(map[string]*idleState),
	}
	m.batch.Store(int64(cfg.BatchSize))
	m.ctx, m.cancel = context.WithCancel(context.Background())
	sup, err := supervisor.StartNamed(sys, supervisor.Spec{
		Strategy: supervisor.OneForOne, Intensity: 50, Period: 10 * time.Second,
		// Its children are connection masters, one per peer: their
		// starts are the runtime's routine, not the application's.
		Logger: slog.New(routineAtDebug{m.log.Handler()}).With("tree", SupervisorName),
	}, SupervisorName)
	if err != nil {
		m.cancel()
		return nil, fmt.Errorf("proxypool: start supervisor: %w", err)
	}
	m.sup = sup
	sys.SubscribeDeadLetters(m.onDeadLetter)
	sys.OnStop(m.stop)
	hooks := remote.Hooks{
		OnPeer:     m.onPeer,
		OnPeerGone: m.onPeerGone,
		OnMember:   m.onMember,
		OnForget:   m.onForget,
		OnClose:    m.waitGoroutines,
	}
	if !cfg.Eager && !cfg.ManualConnect {
		hooks.OnNativeTraffic = m.onNative
		m.goOwned(m.sweepIdle)
	}
	node.AddHooks(hooks)
	if !cfg.ManualConnect && cfg.Eager {
		for _, p := range node.Peers() {
			m.onPeer(p)
		}
	}
	return m, nil
}

// SetBatchSize changes the batch cap used by the next pools built.
func (m *Manager) SetBatchSize(n int) {
	if n > 0 {
		m.batch.Store(int64(n))
	}
}

// StartConnection starts a connection master for node if there is none.
// Asynchronous: the pool is built when the peer's receiver pool answers;
// poll ConnectionInfo. Idempotent.
func (m *Manager) StartConnection(ctx context.Context, node string) error {
	m.mu.Lock()
	delete(m.auto, node) // the user's: kept until StopConnection
	m.mu.Unlock()
	return m.startConnection(ctx, node, 0)
}

// startConnection starts a master for node; need is the size of the
// peer's receiver pool when the caller knows it (0: look it up).
func (m *Manager) startConnection(ctx context.Context, node string, need int) error {
	if node == m.sys.Name() {
		return fmt.Errorf("proxypool: start connection: %q is this node", node)
	}
	m.mu.Lock()
	_, exists := m.conns[node]
	closing := m.closing
	m.mu.Unlock()
	if closing {
		return actor.ErrStopped
	}
	if exists {
		return nil
	}
	if err := m.reserveLinks(node, need); err != nil {
		return err
	}
	_, err := supervisor.StartChild(ctx, m.sys, m.sup, supervisor.ChildSpec{
		ID: node, Props: masterProps(m, node), Restart: supervisor.Permanent, Shutdown: 10 * time.Second,
	})
	if errors.Is(err, supervisor.ErrIDTaken) {
		return nil // started meanwhile
	}
	if err != nil {
		m.releaseLinks(node)
	}
	return err
}

// StopConnection tears node's pool down and removes its master. Traffic
// to node takes the native path until StartConnection is called or, with
// automatic connection, the peer announces itself again. Per-sender order
// holds across the change: what the pool's proxies hold is written first
// (StopConnection waits for it, at most the remote layer's heartbeat
// window; what is left then becomes counted dead letters), and the native
// path delivers nothing that follows before the peer has read it. This is
// the only way a master is removed. Idempotent.
func (m *Manager) StopConnection(ctx context.Context, node string) error {
	m.mu.Lock()
	delete(m.auto, node)
	m.mu.Unlock()
	if err := supervisor.TerminateChild(ctx, m.sys, m.sup, node); err != nil && !errors.Is(err, supervisor.ErrUnknownChild) {
		return err
	}
	if err := supervisor.DeleteChild(ctx, m.sys, m.sup, node); err != nil && !errors.Is(err, supervisor.ErrUnknownChild) {
		return err
	}
	m.releaseLinks(node)
	return nil
}

// ConnectionInfo reports this node's connection to node in Status:
// Connected (a pool is published: proxy count and peer incarnation), Down
// (a master exists, no pool), or NotConnected (no master).
func (m *Manager) ConnectionInfo(node string) Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	if info := m.conns[node]; info != nil {
		return *info
	}
	return Info{Node: node, Status: NotConnected}
}

// Stats are the pooled-path figures for one peer node.
type Stats struct {
	Batches, Messages, Bytes uint64
	MeanBatch                float64
	// Hist counts batches by size: bucket i holds sizes in (2^(i-1), 2^i]
	// (bucket 0: size 1; the last bucket: everything larger).
	Hist            [12]uint64
	Replies         uint64 // replies that went back through this pool
	GuardViolations uint64 // must stay 0
	QueueDepth      int    // messages waiting in the current proxies
	QueueBytes      int64  // their encoded bytes
	DeadLetters     uint64 // queued messages dropped at teardowns
}

// Stats returns the pooled-path figures for node.
func (m *Manager) Stats(node string) Stats {
	ps := m.host.Stats(node)
	s := Stats{
		Batches: ps.Batches.Load(), Messages: ps.Messages.Load(), Bytes: ps.Bytes.Load(),
		MeanBatch: ps.MeanBatch(), Replies: ps.Replies.Load(), GuardViolations: ps.GuardViolations.Load(),
	}
	for i := range s.Hist {
		s.Hist[i] = ps.Hist[i].Load()
	}
	if pool := m.host.Route(node); pool != nil {
		s.QueueBytes = pool.QueuedBytes()
		s.QueueDepth = pool.QueueDepth()
	}
	m.mu.Lock()
	if d := m.dead[node]; d != nil {
		s.DeadLetters = d.Load()
	}
	m.mu.Unlock()
	return s
}

func (m *Manager) onDeadLetter(d actor.DeadLetter) {
	o, ok := d.Message.(*Outgoing)
	if !ok {
		return
	}
	m.mu.Lock()
	c := m.dead[o.Node()]
	if c == nil {
		c = new(atomic.Uint64)
		m.dead[o.Node()] = c
	}
	m.mu.Unlock()
	c.Add(1)
}

// setInfo publishes a master's state; nil removes it.
func (m *Manager) setInfo(node string, info *Info) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if info == nil {
		delete(m.conns, node)
		return
	}
	cp := *info
	m.conns[node] = &cp
}

func (m *Manager) master(node string) (actor.PID, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if info := m.conns[node]; info != nil {
		return info.Master, true
	}
	return actor.PID{}, false
}

// notify tells node's master about its peer, starting one when the
// connection is automatic. Hooks call it: it never blocks.
func (m *Manager) notify(node string, msg any, start bool) {
	if pid, ok := m.master(node); ok {
		_ = actorhooks.Inject(m.sys, pid, msg)
		return
	}
	if start && m.cfg.Eager {
		need := 0
		if up, ok := msg.(peerUp); ok {
			need = up.poolSize
		}
		m.autoStart(node, need)
	}
}

// autoStart starts a master for node on the manager's own account (it
// goes with the node name, or for idleness when lazy). It never blocks.
func (m *Manager) autoStart(node string, need int) {
	m.mu.Lock()
	closing := m.closing
	m.mu.Unlock()
	if m.cfg.ManualConnect || closing {
		return
	}
	m.mu.Lock()
	if _, exists := m.conns[node]; !exists {
		m.auto[node] = true
	}
	m.mu.Unlock()
	m.goOwned(func() {
		ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
		defer cancel()
		if err := m.startConnection(ctx, node, need); err != nil && !errors.Is(err, actor.ErrStopped) && !errors.Is(err, ErrPoolLinkCap) && m.ctx.Err() == nil {
			m.log.Warn("could not start a connection master", "peer", node, "err", err)
		}
	})
}

// goOwned runs f on a goroutine the manager waits for; once the remote
// layer has closed (OnClose), it starts nothing and reports false.
func (m *Manager) goOwned(f func()) bool {
	m.mu.Lock()
	if m.goDone {
		m.mu.Unlock()
		return false
	}
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		f()
	}()
	return true
}

// waitGoroutines is the remote layer's OnClose: every link is closed, so
// the goroutines waiting on links and dials end; wait for them.
func (m *Manager) waitGoroutines() {
	m.mu.Lock()
	m.goDone = true
	m.mu.Unlock()
	m.wg.Wait()
}

func (m *Manager) onPeer(p remote.PeerInfo) {
	m.notify(p.Node, peerUp{inc: p.Incarnation, poolSize: p.PoolWorkers}, true)
}

func (m *Manager) onPeerGone(p remote.PeerInfo) {
	m.notify(p.Node, peerGone{inc: p.Incarnation}, false)
}

// onForget removes what the manager keeps for a node name the remote
// layer forgot: the master it started by itself (one the user started
// stays until StopConnection) and its counters.
func (m *Manager) onForget(node string) {
	m.mu.Lock()
	auto := m.auto[node]
	delete(m.auto, node)
	delete(m.dead, node)
	delete(m.capLogged, node)
	m.mu.Unlock()
	if !auto {
		return
	}
	m.goOwned(func() {
		ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
		defer cancel()
		if err := m.StopConnection(ctx, node); err != nil && m.ctx.Err() == nil {
			m.log.Warn("could not remove the connection master of a forgotten node", "peer", node, "err", err)
		}
	})
}

func (m *Manager) onMember(ev discovery.Event) {
	switch ev.Type {
	case discovery.MemberUp, discovery.MemberUpdated:
		if ev.Member.Incarnation != 0 {
			m.notify(ev.Member.Node, peerUp{inc: ev.Member.Incarnation, poolSize: ev.Member.PoolWorkers}, true)
		}
	case discovery.MemberDown:
		m.notify(ev.Member.Node, peerGone{inc: ev.Member.Incarnation}, false)
	}
}

// stop runs first in System.Stop: no more builds, and every pool is
// unpublished so the remote layer drains and says goodbye natively.
func (m *Manager) stop(context.Context) error {
	m.mu.Lock()
	m.closing = true
	nodes := make([]string, 0, len(m.conns))
	for n := range m.conns {
		nodes = append(nodes, n)
	}
	m.mu.Unlock()
	m.cancel()
	for _, n := range nodes {
		if pool := m.host.Route(n); pool != nil {
			m.host.Unpublish(pool, errors.New("local node stopping"))
		}
	}
	return nil
}

func (m *Manager) isClosing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closing
}
