package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/actor/pidpb"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/discoveryhooks"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/mailroom-go/mailroom/remote/internal/peers"
	"go.opentelemetry.io/otel/trace"
)

// Lock order. Locks are taken only in this order (a lock may be taken
// while holding one above it, never one above while holding one below),
// and none is held while calling out (hooks, the actor system, a
// handler) except where noted.
//
// No callback runs under peer.pathMu, Node.mu, peer.mu, link.wmu or
// link.mu: not a Hooks callback, not a dead-letter subscriber (the dead
// letters of a closed link's unsent frames), not a pool's Dropped, not a
// pending call's failure. Each may send to the very peer whose lock is
// held, and a send takes pathMu shared, then Node.mu and peer.mu. Code
// that must close a link under one of them (the fences and the publish
// barrier, under pathMu) changes the link's state there (closeLater) and
// runs what the close leaves to do (effects) once it has released them.
//
//  1. poolLink.fmu   a pool link's turn: its proxy's Flush, an owned
//                    write, DropQueued. Never taken under another lock.
//                    Under it: the queue's mu, the link's wmu and mu, and
//                    a dropped reply rerouted on another link (waiting
//                    for room there). What a failed write's close runs
//                    (linkDown) and a dropped send's dead letter or
//                    Dropped run after it (effects): a subscriber sending
//                    to the peer would wait for room in the very queue
//                    the turn frees.
//     peer.pathMu    never held with a poolLink.fmu. It orders native
//                    sends against a change of path (barrier.go). Shared:
//                    a native sender, from its route check to its enqueue
//                    (it may wait for room in its link). Exclusive:
//                    publishPool and unpublishPool, which never wait (the
//                    barrier's ping and the fences take the control
//                    headroom, or close a link too full for them: its
//                    state under the lock, its effects after it,
//                    link.closeLater).
//  2. Node.mu        names and incarnations (slots), accepted links not
//                    yet attached, draining, closing, meta, pool stats;
//                    routes are written under it.
//  3. peer.mu        what is pinned to an incarnation: its links, the
//                    native out link, pending calls, watches, the dial
//                    index and abandoned ids (supersede.go).
//  4. link.wmu       writes to a connection: the writer goroutine and a
//                    pool link's owner (writeNow) take it before link.mu,
//                    so that a frame queued on the link (a fence, a pong)
//                    is never overtaken by a batch written directly.
//  5. link.mu        a link's buffer, sequence, close state, pings and
//                    barriers.
//  6. Leaves, never held while taking another lock: proxyQueue.mu,
//     admission.mu, readBudget.mu, handshakeGate.mu, logLimiter.mu, the
//     call workers' and running calls' mu, callCtx.mu, wire.Codecs' mu.
//
// proxypool's locks are never held when it calls the host or a pool link
// (internal/poolpath). Atomics are counters, once-flags, copy-on-write
// snapshots (routes, hooks) and the progress flags liveness reads
// (link.go); none orders anything a lock does not.

// Node is the remote layer of one System: it listens, dials, keeps one
// native link per peer incarnation in each direction, and carries Send,
// Request, Cast, Call and Watch to other nodes for its System, whose
// methods (any actor.Caller) reach other nodes through it.
//
// Its parts: the acceptor (accept.go: the listener, the handshakes in
// progress), the dialer (dial.go: links it dials, one dial per name at a
// time), the liveness step and its clock (clock.go), the table of node
// names (slots, under mu: node.go, prune.go) and, as views of the Node
// with methods of their own, the transport the actor package calls
// (outbound.go) and the host of the pooled path (pool.go).
type Node struct {
	sys    *actor.System
	cfg    Config
	log    *slog.Logger
	cookie []byte
	addr   string
	disc   discovery.Provider

	readBudget *readBudget // bytes of frame buffers on every link (readbudget.go)
	ready      readiness   // native links up, for WaitPeer (ready.go)

	live liveness // the liveness and idle step and its clock (clock.go)

	mu        sync.Mutex // protects following
	slots     map[string]*slot
	inbound   map[*link]struct{} // links accepted and not yet attached
	draining  bool
	closing   bool
	meta      map[string]string     // what Announce published
	poolStats map[string]*poolStats // pooled-path counters, by node
	// namesBySrc counts the names learned from hellos by source address
	// (prune.go).
	namesBySrc map[string]int

	routes atomic.Pointer[map[string]*pubPool] // published pools, by node; written under mu
	codecs wire.Codecs                         // how each registered type decodes (codec.go)
	types  actor.TypeRegistry                  // the System's (Config.Types)
	tracer trace.Tracer                        // Config.TracerProvider's; nil: no spans (trace.go)

	nextID      atomic.Uint64
	deadOnce    atomic.Bool // selfDead ran
	startFailed atomic.Bool // Start returned an error: nothing to stop
	stats       nodeStats
	acc         acceptor // the listener and its handshakes (accept.go)
	dial        dialer   // dials links and names them (dial.go)
	// peerWarnLog and peerDebugLog: the other lines a peer can cause
	// (peerlog.go).
	peerWarnLog, peerDebugLog logLimiter
	hooks                     atomic.Pointer[[]Hooks]
	running                   sync.WaitGroup // inbound calls executing here
	workers                   workerPool     // the goroutines that run them (callworkers.go)
	runningByFn               fnCounts       // inbound calls executing, by function (stats.go)
	wg                        sync.WaitGroup // accept, liveness, handshakes
	linkWG                    sync.WaitGroup // every link's reader and writer
	stop                      chan struct{}
	stopped                   chan struct{}
	once                      sync.Once

	// afterPublishSwap, in tests, runs right after publishPool changed
	// the route, under the peer's path lock.
	afterPublishSwap func()
	// afterPoolRefused, in tests, runs when a pool refused a call's push,
	// before the caller takes its call back.
	afterPoolRefused func()

	// nativeWatched: some hook has OnNativeTraffic (hooks.go).
	nativeWatched atomic.Bool
}

// slot is what this node knows about one node name.
type slot struct {
	name string
	addr string
	// addrInc is the incarnation addr was learned for (from its hello or
	// discovery); 0 when it was configured (a seed, Connect) and holds for
	// any incarnation. A hello of another incarnation replaces a learned
	// addr; a configured one stays primary (alt).
	addrInc uint64
	// alt is the address a hello of incarnation altInc announced on a
	// link that node dialled to us, when it differs from a configured
	// addr (addrInc 0): connect dials it only after a dial to addr failed
	// (a seed restarted on a new port), never instead of it, since where
	// nodes reach each other through a proxy or NAT the address a node
	// announces may not be the one that works from here. It goes with
	// its incarnation (bury).
	alt    string
	altInc uint64
	// via is the address a native dial of this node last reached
	// incarnation viaInc at: pool links to that incarnation dial it too
	// (poollink.go), and Peer reports it. It goes with its incarnation.
	via     string
	viaInc  uint64
	member  discovery.Member
	cur     *peer                // the live incarnation, nil if none known
	dialing *dialAttempt         // non-nil while a dial runs
	tomb    map[uint64]time.Time // incarnations declared gone (the latest maxTombs)
	seen    time.Time            // when it was last known in use (prune.go)
	marks   peers.NameMarks      // listed, pinned, kept (state.go)
	// ups are the incarnations discovery lists up with an address, the
	// latest listed last, at most maxListed: a crashed incarnation may
	// stay listed beside its successor until its TTL runs out. connect
	// dials them when addr fails (dial.go, fallbacks).
	ups []discovery.Member
	src string // the source of the hello it was learned from (counted in namesBySrc); "" otherwise
}

// dialAttempt is one dial of a native link. Callers that find a dial
// running wait for it and share its failure: a crowd of senders to a
// dead node fails with one refused dial, not one dial each in turn. A
// dial that failed because the dialing caller's own ctx ended is not
// shared (err stays nil): the waiters dial again.
type dialAttempt struct {
	addr string // the address it dials
	done chan struct{}
	err  error // set before done closes
}

// Start attaches the remote layer to sys: it listens, starts discovery,
// and makes every operation on a PID or node elsewhere go over the wire.
// ctx bounds the start itself, which waits for discovery to register this
// node (an agent's answer, for Consul); the layer then runs until
// System.Stop stops it (drain, goodbye, close links, deregister). On an
// error nothing is left running and sys has no transport.
func Start(ctx context.Context, sys *actor.System, cfg Config) (*Node, error) {
	return start(ctx, sys, cfg, nil)
}

// start is Start, on the logical clock given (nil: the wall clock;
// clock.go).
func start(ctx context.Context, sys *actor.System, cfg Config, logical *atomic.Int64) (*Node, error) {
	cfg, err := cfg.withDefaults(sys)
	if err != nil {
		return nil, err
	}
	// A PID can cross the wire alone, not only inside users' messages.
	if err := sys.RegisterTypes(&pidpb.PID{}); err != nil {
		return nil, fmt.Errorf("remote: start: %w", err)
	}
	n := &Node{
		sys: sys, cfg: cfg, log: cfg.Logger.With("layer", "remote"), types: sys.Config().Types,
		cookie:     []byte(cfg.Cookie),
		slots:      make(map[string]*slot),
		namesBySrc: make(map[string]int),
		inbound:    make(map[*link]struct{}),
		stop:       make(chan struct{}),
		stopped:    make(chan struct{}),

		readBudget: newReadBudget(cfg.Limits.ReadBudgetBytes),
		tracer:     newTracer(cfg.TracerProvider),
	}
	n.live = liveness{node: n, logical: logical}
	n.codecs.Node = sys.Name()
	n.ready.install(n)
	n.dial = dialer{node: n, log: newDialLog(n.log, dialLogEvery)}
	n.acc.node = n
	n.acc.gate = newHandshakeGate(cfg.Limits.MaxHandshakes, cfg.Limits.MaxHandshakesPerIP)
	n.acc.acceptLog = logLimiter{every: time.Second, burst: 1}
	n.acc.shedLog = logLimiter{every: time.Second, burst: 1}
	n.acc.refusedLog = logLimiter{every: time.Second, burst: 20}
	n.peerWarnLog = logLimiter{every: time.Second, burst: peerLogBurst}
	n.peerDebugLog = logLimiter{every: time.Second, burst: peerLogBurst}
	n.routes.Store(&map[string]*pubPool{})
	ln, err := cfg.Network.Listen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("remote: listen %s: %w", cfg.Listen, err)
	}
	n.acc.ln = ln
	n.addr = cfg.Advertise
	if n.addr == "" {
		n.addr = ln.Addr().String()
	}
	n.disc = cfg.Discovery
	if n.disc == nil {
		st, err := discovery.NewStatic(cfg.Seeds...)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("remote: seeds: %w", err)
		}
		n.disc = st
	}
	discoveryhooks.DefaultLogger(n.disc, cfg.Logger)
	actorhooks.SetTransport(sys, (*transport)(n))
	sys.OnStop(n.shutdown)
	n.wg.Add(1)
	go n.acc.loop() // accept.go
	if logical == nil {
		n.wg.Add(1)
		go n.live.loop() // clock.go
	}
	if err := n.disc.Start(ctx, n.self(), n.onMember); err != nil {
		n.startFailed.Store(true) // its stop hook has nothing to do
		n.closeAll()
		actorhooks.SetTransport(sys, nil)
		return nil, fmt.Errorf("remote: start discovery: %w", err)
	}
	keepSeeds(n) // seeds.go
	n.log.Info("remote layer started", "addr", n.addr, "incarnation", actor.FormatIncarnation(sys.Incarnation()), "pool", cfg.poolWorkers())
	return n, nil
}

// Addr is the address other nodes dial to reach this one.
func (n *Node) Addr() string { return n.addr }

// System is the node's actor system.
func (n *Node) System() *actor.System { return n.sys }

// Config is the configuration in effect.
func (n *Node) Config() Config { return n.cfg }

func (n *Node) self() discovery.Member {
	n.mu.Lock()
	draining, meta := n.draining, n.meta
	n.mu.Unlock()
	return discovery.Member{Node: n.sys.Name(), Incarnation: n.sys.Incarnation(), Addr: n.addr, PoolWorkers: n.cfg.poolWorkers(), Draining: draining, Meta: meta}
}

// slotLocked returns the slot for name, creating it. Under n.mu.
func (n *Node) slotLocked(name string) *slot {
	s := n.slots[name]
	if s == nil {
		s = &slot{name: name, tomb: make(map[uint64]time.Time), seen: n.live.now()}
		n.slots[name] = s
	}
	return s
}

// onRefused stops this node when a peer refused it, with an
// authenticated refusal, because its incarnation was declared dead (it was
// frozen past its TTL, or cut off): the cluster has already failed
// everything pinned to it, so it must not come back as the same
// incarnation. A restart is a new incarnation. A refusal the peer did not
// prove the cookie over changes nothing: anyone at an address this node
// dials could forge it.
func (n *Node) onRefused(err error) {
	var r *wire.Refusal
	if errors.As(err, &r) && r.ByPeer && r.Authenticated && r.Code == wire.CodeDeclaredDead {
		n.selfDead("a peer refused it: " + r.Reason)
	}
}

// selfDead stops the node once: its incarnation is dead for the cluster.
func (n *Node) selfDead(why string) {
	if !n.deadOnce.CompareAndSwap(false, true) {
		return
	}
	n.log.Error("this node incarnation was declared dead by the cluster; stopping it (a restart is a new incarnation)", "incarnation", actor.FormatIncarnation(n.sys.Incarnation()), "why", why)
	// Every caller has already been told its calls here failed (node
	// down): what still runs is orphaned. Cancel it rather than wait.
	for _, p := range n.livePeers() {
		p.cancelAllRunning()
	}
	go n.sys.Stop(context.Background())
}

// onMember applies a discovery event.
func (n *Node) onMember(ev discovery.Event) {
	if i := int(ev.Type) - 1; i >= 0 && i < len(n.stats.memberEvents) {
		n.stats.memberEvents[i].Add(1)
	}
	m := ev.Member
	if m.Node == n.sys.Name() {
		if ev.Type == discovery.MemberDown && m.Incarnation == n.sys.Incarnation() {
			n.selfDead("discovery reported it down")
		}
		return
	}
	n.mu.Lock()
	s := n.slotLocked(m.Node)
	s.seen = n.live.now()
	var gone, kept *peer
	switch ev.Type {
	case discovery.MemberUp, discovery.MemberUpdated:
		s.markListed()
		if _, dead := s.tomb[m.Incarnation]; dead && m.Incarnation != 0 {
			break
		}
		if s.cur != nil && m.Incarnation != 0 && s.cur.inc != m.Incarnation && s.cur.stillConnected() {
			// Ours is linked and alive: a listing of another incarnation
			// is no evidence that it is gone, as a hello claiming a newer
			// one is not (register). Incarnations are random, so a
			// listing cannot say which is newer, and discovery lists a
			// crashed incarnation beside its successor until its TTL runs
			// out (one answer's members in ID order): taking it for the
			// newer one ended a live incarnation, which was then refused
			// as declared dead and stopped. A successor replaces ours by
			// its hello once our links to it have closed (at once after a
			// crash, within the heartbeat window if its host vanished),
			// or the old one's Down ends it. Its address is kept for the
			// fallback (listUp), ours stays the one to dial.
			s.listUp(m)
			kept = s.cur
			break
		}
		s.listUp(m)
		if m.Addr != "" {
			s.addr, s.addrInc = m.Addr, m.Incarnation
		}
		s.member = m
		if s.cur != nil && m.Incarnation != 0 && s.cur.inc != m.Incarnation {
			gone = s.cur // a newer incarnation is up: the old one is gone
		}
	case discovery.MemberDown:
		s.listDown(m.Incarnation)
		s.relisted()
		if m.Incarnation == 0 {
			break
		}
		s.bury(m.Incarnation, n.live.now())
		if s.addrInc == m.Incarnation && !s.marks.Pinned() {
			// The address was that incarnation's: dialling it again could
			// only reach a dead process or a stranger. Another listed
			// incarnation's is the one to dial (discovery listed a
			// crashed one beside its successor, and ours was the
			// crashed one's); none: the next Up brings the new one's.
			s.addr, s.addrInc = "", 0
			if k := len(s.ups); k > 0 {
				u := s.ups[k-1]
				s.addr, s.addrInc, s.member = u.Addr, u.Incarnation, u
			}
		}
		if s.cur != nil && s.cur.inc == m.Incarnation {
			gone = s.cur
		}
	}
	n.mu.Unlock()
	if gone != nil {
		n.incarnationGone(gone, fmt.Errorf("discovery reports incarnation %016x %s", gone.inc, ev.Type))
	}
	if kept != nil {
		n.peerLine(slog.LevelInfo, "discovery lists another incarnation beside the linked one: kept the linked one", "peer", m.Node,
			"linked", actor.FormatIncarnation(kept.inc), "listed", actor.FormatIncarnation(m.Incarnation))
	}
	n.each(func(h *Hooks) {
		if h.OnMember != nil {
			h.OnMember(ev)
		}
	})
}

// attach binds an authenticated connection to the peer incarnation it
// reached, replacing an older incarnation of the same name. h is the
// other side's hello; the link's role is the client's (ours when
// outbound). A failure wraps ErrHandshake: the link never came up.
func (n *Node) attach(conn net.Conn, h wire.Hello, outbound bool, dialID uint64) (*link, error) {
	l, old, err := n.register(conn, h, outbound, dialID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	n.activate(l, old)
	return l, nil
}

// register binds conn to its peer incarnation under the node lock, so a
// node that has begun closing admits no link: it refuses instead (before
// the welcome, for inbound links). The link does not run until activate.
// h has proved the cookie. An older incarnation of the same name is
// replaced only on evidence that it is gone: its links have all closed
// (or gone silent, and liveness closed them), it said goodbye, or
// discovery reported it down or replaced (onMember: only once its links
// have closed). While it still has live links,
// a hello claiming a newer one is refused as retryable
// (codeStillConnected): the claim alone is no evidence, since any cookie
// holder can make it (with TLS, only a holder of a certificate for that
// name). A restarted node is admitted as soon as its old links close: at
// once after a crash or SIGKILL (the kernel resets them), within the
// heartbeat window if its host vanished.
func (n *Node) register(conn net.Conn, h wire.Hello, outbound bool, dialID uint64) (*link, *peer, error) {
	role, worker := h.Role, h.Worker
	src := ""
	if outbound {
		role, worker = roleOf(conn)
	} else {
		src = sourceOf(conn)
	}
	var gone []forgotten // names forgotten to make room: ended once n.mu is released
	defer func() {
		n.afterForget(gone, fmt.Errorf("forgotten to make room for %s in the node table (MaxNodes)", h.Node))
	}()
	n.mu.Lock()
	if n.closing {
		n.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: %w", actor.ErrStopped, wire.Refuse(wire.CodeStopping, "node %s is shutting down", n.sys.Name()))
	}
	isNew := n.slots[h.Node] == nil
	if isNew && !outbound {
		var ok bool
		if gone, ok = n.roomForNameLocked(src); !ok {
			n.mu.Unlock()
			n.stats.linksRefused.Add(1)
			return nil, nil, wire.Refuse(wire.CodeTooManyNodes, "too many node names known here (MaxNodes %d, %d from %s): %s not admitted", n.cfg.Limits.MaxNodes, n.cfg.namesPerSource(), src, h.Node)
		}
	}
	s := n.slotLocked(h.Node)
	if isNew && src != "" {
		s.src = src
		n.namesBySrc[src]++
	}
	s.seen = n.live.now()
	if _, dead := s.tomb[h.Inc]; dead || (s.cur != nil && s.cur.inc == h.Inc && s.cur.isGone()) {
		// (the second: its tomb was evicted, but it is the one known)
		n.mu.Unlock()
		return nil, nil, wire.Refuse(wire.CodeDeclaredDead, "incarnation %016x of %s was declared dead", h.Inc, h.Node)
	}
	if role == wire.RolePool && outbound && (s.cur == nil || s.cur.inc != h.Inc) {
		n.mu.Unlock()
		return nil, nil, fmt.Errorf("pool link reached incarnation %016x of %s, which is not current", h.Inc, h.Node)
	}
	var old *peer
	p := s.cur
	if p == nil || p.inc != h.Inc {
		if p != nil && p.stillConnected() {
			n.mu.Unlock()
			return nil, nil, wire.Refuse(wire.CodeStillConnected, "incarnation %016x of %s still has live links; incarnation %016x is admitted once they close or go silent (retry)", p.inc, h.Node, h.Inc)
		}
		old = p
		if old != nil {
			s.bury(old.inc, n.live.now())
		}
		p = newPeer(n, h.Node, h.Inc, int(h.PoolSize))
		s.incarnate(p)
	}
	if !outbound && p.inboundLinks() >= n.cfg.Limits.MaxLinksPerPeer {
		n.mu.Unlock()
		n.stats.linksRefused.Add(1)
		return nil, nil, wire.Refuse(wire.CodeTooManyLinks, "too many links from %s (incarnation %016x): %d open (MaxLinksPerPeer)", h.Node, h.Inc, n.cfg.Limits.MaxLinksPerPeer)
	}
	// A peer that only dialed us can be dialed back; an address learned
	// for another incarnation is stale (it restarted elsewhere). A
	// configured address (a seed, Connect) is the operator's word and
	// stays the one dialled first: what a peer that dialled us announces
	// beside it is kept as the alternate tried when it fails (slot.alt).
	switch {
	case h.Addr == "":
	case s.addr == "" || (s.addrInc != 0 && s.addrInc != h.Inc):
		s.addr, s.addrInc = h.Addr, h.Inc
	case !outbound && s.addrInc == 0 && h.Addr != s.addr:
		s.alt, s.altInc = h.Addr, h.Inc
	}
	e := wire.Ends{SelfNode: n.sys.Name(), SelfInc: n.sys.Incarnation(), PeerNode: h.Node, PeerInc: h.Inc, In: new(wire.Interner), MaxMsg: n.cfg.Limits.MaxMessageSize}
	l := newLink(n, conn, role, outbound, e, p)
	l.worker = worker
	l.dialID = dialID
	if !outbound {
		l.dialID = h.LinkID
	}
	p.addLink(l)
	n.mu.Unlock()
	return l, old, nil
}

// activate runs a registered link: an older incarnation it replaced is
// gone, the reader and writer start, layers are told.
func (n *Node) activate(l *link, old *peer) {
	p := l.peer
	if old != nil {
		n.incarnationGone(old, fmt.Errorf("restarted as incarnation %016x", p.inc))
	}
	n.peerLine(slog.LevelDebug, "link up", "peer", p.name, "incarnation", actor.FormatIncarnation(p.inc), "link", l.kind())
	l.start((*link).dispatch)
	if l.role == wire.RoleNative {
		l.announce() // a peer that joins late learns what we announced
		n.each(func(h *Hooks) {
			if h.OnPeer != nil {
				h.OnPeer(p.info())
			}
		})
	}
}

// roleOf recovers the role of a connection this node dialed.
func roleOf(conn net.Conn) (uint8, uint32) {
	if rc, ok := conn.(*roleConn); ok {
		return rc.role, rc.worker
	}
	return wire.RoleNative, 0
}

// roleConn tags a dialed connection with the role it was dialed for.
type roleConn struct {
	net.Conn
	role   uint8
	worker uint32
}

// errNoHalfClose: the connection cannot be half-closed.
var errNoHalfClose = errors.New("remote: connection cannot be half-closed")

// CloseWrite half-closes the connection it wraps, when that can.
func (c *roleConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errNoHalfClose
}

// Connect dials node at addr (when addr is not empty, it is remembered)
// and waits for the native link. Not needed when discovery knows the node.
// The link is kept: it is not closed when idle (Config.Liveness.LinkIdleTimeout).
func (n *Node) Connect(ctx context.Context, node, addr string) error {
	n.mu.Lock()
	s := n.slots[node]
	if addr != "" {
		s = n.slotLocked(node)
		s.pin(addr)
	}
	if s != nil { // (none: nothing to dial, connect says so)
		s.markKept()
	}
	n.mu.Unlock()
	_, _, err := n.dial.connect(ctx, node)
	return err
}
