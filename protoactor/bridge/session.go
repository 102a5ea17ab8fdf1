package bridge

import (
	"context"
	"fmt"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/mailroom-go/mailroom/protoactor/internal/wirepb"
)

// A session is this bridge's state toward one node name. Everything for
// that node goes through it, so it pins what it sends to the incarnation
// it knows:
//
//	idle ──first message──▶ connecting ──hello answered──▶ up
//	  ▲                       │ hello failed                │ peer gone
//	  └───────────────────────┴─────────────────────────────┘
//
// While connecting, messages wait in order (at most MaxQueued); when the
// hello is answered they are sent in that order before any later one.
// A hello from the node itself also brings the session up.
type session struct {
	node string

	mu    sync.Mutex // protects following
	state sessionState
	peer  *peer     // when up
	queue []*outMsg // when connecting
}

type sessionState int

const (
	stateIdle sessionState = iota
	stateConnecting
	stateUp
)

// outMsg is one message on its way to another node.
type outMsg struct {
	node     string
	inc      uint64 // the incarnation the target PID names; 0: the current one
	target   *actor.PID
	msg      any // the original message, for dead letters
	env      *wirepb.Envelope
	lane     int
	endpoint int
	// requester is a local sender waiting for an answer (a future or an
	// actor's Request): told when the message cannot be delivered.
	requester *actor.PID
	// future: the requester is a local future, pinned to the peer and
	// failed at once if the peer goes.
	future bool
	// watcher: a Watch from this local actor, told Terminated if it
	// cannot be set.
	watcher *actor.PID
}

// sessionTable holds the sessions by node name.
type sessionTable struct {
	mu sync.RWMutex // protects m
	m  map[string]*session
}

func (t *sessionTable) init() { t.m = make(map[string]*session) }

func (t *sessionTable) get(node string) *session {
	t.mu.RLock()
	s := t.m[node]
	t.mu.RUnlock()
	if s != nil {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s = t.m[node]; s == nil {
		s = &session{node: node}
		t.m[node] = s
	}
	return s
}

// route sends m to node through its session. m is copied if it has to
// wait, so the caller's may live on its stack.
func (b *Bridge) route(m *outMsg) {
	s := b.sessions.get(m.node)
	s.mu.Lock()
	switch s.state {
	case stateUp:
		p := s.peer
		s.mu.Unlock()
		b.transmit(p, m)
		return
	case stateIdle:
		s.state = stateConnecting
		s.queue = append(s.queue, m.clone())
		s.mu.Unlock()
		node := m.node // not m: it may live on the caller's stack
		if !b.goOwned(func() { b.connect(node) }) {
			b.sessionFailed(node, errStoppedReason())
		}
		return
	}
	if len(s.queue) >= b.cfg.MaxQueued {
		s.mu.Unlock()
		b.fail(m, overloadedReason(m.node, b.cfg.MaxQueued))
		return
	}
	s.queue = append(s.queue, m.clone())
	s.mu.Unlock()
}

func (m *outMsg) clone() *outMsg {
	c := *m
	return &c
}

// transmit hands m to mailroom, pinned to p.
func (b *Bridge) transmit(p *peer, m *outMsg) {
	if m.inc != 0 && m.inc != p.key.inc {
		b.fail(m, staleReason(p.key, m.inc))
		return
	}
	if m.future {
		// A request is pinned to the incarnation it is sent to, even when
		// its target PID names only the node: if that incarnation goes,
		// the future fails, and a later one refuses it.
		m.env.TargetIncarnation = p.key.inc
		if !b.pending.add(m.requester.Id, m.target.Id, p, b.futureWaits) {
			b.fail(m, nodeDownReason())
			return
		}
		b.stats.requests.Add(1)
	}
	if m.watcher != nil && !p.addWatching(m.watcher, m.target) {
		b.fail(m, nodeDownReason())
		return
	}
	b.stats.sent.Add(1)
	b.mr.send(m.lane, p.key.node, m.endpoint, m.env)
}

// futureWaits reports whether the local future id still waits.
func (b *Bridge) futureWaits(id string) bool {
	_, ok := b.pas.ProcessRegistry.GetLocal(id)
	return ok
}

// Connect opens the session with node now, instead of at the first
// message, and returns when it is up: the node's current incarnation
// answered and is watched. An error says why it cannot open (mailroom's
// ErrUnreachable, or ErrNoProcess for a node without a bridge); messages
// sent meanwhile are not affected. For start-up checks and benchmarks.
func (b *Bridge) Connect(ctx context.Context, node string) error {
	if node == b.self.node {
		return fmt.Errorf("bridge: connect: %q is this node", node)
	}
	if b.stopping.Load() {
		return newError("connect", node, 0, "", errStoppedReason())
	}
	key, endpoint, err := b.mr.hello(ctx, node)
	if err != nil {
		return newError("connect", node, 0, "", err)
	}
	b.sessionUp(key, endpoint)
	return nil
}

// connect opens the session with node: a hello answered by the node's
// current incarnation, which mailroom then watches for the bridge.
func (b *Bridge) connect(node string) {
	key, endpoint, err := b.mr.hello(b.ctx, node)
	if err != nil {
		b.sessionFailed(node, err)
		return
	}
	b.sessionUp(key, endpoint)
}

// sessionUp adopts peer key (watching its endpoint) and sends what waited
// for it, in order, before anything sent later.
func (b *Bridge) sessionUp(key peerKey, endpoint uint64) {
	p, fresh := b.peers.adopt(key)
	if fresh {
		b.mr.watchPeer(key, endpoint)
	}
	s := b.sessions.get(key.node)
	s.mu.Lock()
	if p.gone.Load() {
		// Gone before we got here; peerGone, which takes s.mu after
		// setting gone, found nothing to close. Whatever waited never
		// left this node.
		if s.state != stateConnecting {
			s.mu.Unlock()
			return
		}
		q := s.queue
		s.queue = nil
		s.state = stateIdle
		s.mu.Unlock()
		for _, m := range q {
			b.fail(m, nodeGoneBeforeSendReason(key))
		}
		return
	}
	defer s.mu.Unlock()
	for _, m := range s.queue {
		b.transmit(p, m) // under s.mu: later sends wait for these
	}
	s.queue = nil
	s.state, s.peer = stateUp, p
}

// sessionFailed fails what waited for node's hello; the next message
// tries again.
func (b *Bridge) sessionFailed(node string, reason error) {
	s := b.sessions.get(node)
	s.mu.Lock()
	q := s.queue
	s.queue = nil
	if s.state == stateConnecting {
		s.state = stateIdle
	}
	s.mu.Unlock()
	if len(q) > 0 {
		b.log.Debug("session failed", "node", node, "messages", len(q), "err", reason)
	}
	for _, m := range q {
		b.fail(m, reason)
	}
}

// peerGone closes p's session if it is up with p.
func (t *sessionTable) peerGone(p *peer) {
	s := t.get(p.key.node)
	s.mu.Lock()
	if s.state == stateUp && s.peer == p {
		s.state, s.peer = stateIdle, nil
	}
	s.mu.Unlock()
}

// failAll fails every queued message (Stop).
func (t *sessionTable) failAll(b *Bridge, reason error) {
	t.mu.RLock()
	nodes := make([]string, 0, len(t.m))
	for n := range t.m {
		nodes = append(nodes, n)
	}
	t.mu.RUnlock()
	for _, n := range nodes {
		b.sessionFailed(n, reason)
	}
}

// fail tells whoever waits on m that it will not be delivered: a watcher
// gets Terminated (AddressTerminated), a requester the error, and a plain
// send is a dead letter.
func (b *Bridge) fail(m *outMsg, reason error) {
	switch {
	case m.watcher != nil:
		b.tellTerminated(m.watcher, m.target, actor.TerminatedReason_AddressTerminated)
	case m.requester != nil:
		b.deliverFailure(m.requester, newError("request", m.node, m.inc, describe(m.target), reason))
	default:
		b.dropped(m.target, m.msg, newError("send", m.node, m.inc, describe(m.target), reason))
	}
}

// onHello answers a peer's hello, on endpoint 0's goroutine: the session
// with the peer is up at once (its hello went before anything it sends).
func (b *Bridge) onHello(fromNode string, fromInc uint64, h *wirepb.Hello, endpoint uint64) (*wirepb.Hello, error) {
	switch {
	case b.stopping.Load():
		return nil, errStoppedReason()
	case h.Version != protocolVersion:
		return nil, fmt.Errorf("bridge protocol version %d; node %s speaks version %d", h.Version, b.self.node, protocolVersion)
	case h.Node == "" || h.Incarnation == 0 || h.Endpoint == 0:
		return nil, fmt.Errorf("hello without a node, incarnation or endpoint")
	case h.Node == b.self.node:
		return nil, fmt.Errorf("hello from a node named %s, like this one", h.Node)
	case fromNode != h.Node || fromInc != h.Incarnation:
		return nil, fmt.Errorf("hello names node %s (incarnation %016x) but came from %s (incarnation %016x)", h.Node, h.Incarnation, fromNode, fromInc)
	}
	b.sessionUp(peerKey{h.Node, h.Incarnation}, h.Endpoint)
	return &wirepb.Hello{Version: protocolVersion, Node: b.self.node, Incarnation: b.self.inc, Endpoint: endpoint}, nil
}
