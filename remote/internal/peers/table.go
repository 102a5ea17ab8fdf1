package peers

import (
	"fmt"
	"slices"
)

// Config is a Table's identity, timing and bounds. Zero fields take the
// defaults documented on them.
type Config struct {
	Node     string // this node's name
	Inc      uint64 // this node's incarnation
	PoolSize int    // workers in this node's receiver pool (told in hellos); 0: none

	// HeartbeatInterval is how often a heartbeat is written on a link
	// (default 100). A link silent for HeartbeatInterval x
	// HeartbeatMisses (default 3), the window, is closed; a handshake or
	// a fence waits at most the window too.
	HeartbeatInterval Time
	HeartbeatMisses   int
	// IdleTimeout closes a native link that carried no data for that
	// long while nothing was pinned to its peer; 0: never.
	IdleTimeout Time
	// PoolLinks is the number of links a pool dials (default 2).
	PoolLinks int

	// Bounds: what a peer (or our own callers) can make the Table keep.
	MaxNames        int // node names known (default 64); hellos of new names past it are refused
	MaxLinksPerPeer int // links of one incarnation, either direction (default 8)
	MaxHandshakes   int // accepted links whose hello is not read yet (default 16)
	MaxQueued       int // frames queued on one link before it opens or behind a fence (default 64)
	MaxPending      int // calls pending toward one incarnation (default 256)
	MaxAbandoned    int // abandoned link ids remembered per incarnation (default 64)
	MaxFences       int // links one held link waits for (default 64)
	MaxTombs        int // buried incarnations remembered per name (default 8)

	// Mutations are deliberate bugs, for the simulator's mutation tests
	// only: they prove its invariants catch what they name. Never set
	// outside tests.
	Mutations Mutations
}

// Mutations are test-only switches that break one rule each.
type Mutations struct {
	// SkipTakeoverFence publishes a pool with no barrier: its links
	// write at once, overtaking what the native link still carries.
	SkipTakeoverFence bool
	// StaleReply routes a reply through the name's pool whatever
	// incarnation it was built for (no incarnation guard).
	StaleReply bool
	// UnsentAsExecuted fails a call that was never written as executed.
	UnsentAsExecuted bool
	// WriteCancelled writes a call its caller cancelled while it was
	// queued (no cut at the write): the callee runs what its caller was
	// told never ran.
	WriteCancelled bool
}

func (c *Config) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 100
	}
	def(&c.HeartbeatMisses, 3)
	def(&c.PoolLinks, 2)
	def(&c.MaxNames, 64)
	def(&c.MaxLinksPerPeer, 8)
	def(&c.MaxHandshakes, 16)
	def(&c.MaxQueued, 64)
	def(&c.MaxPending, 256)
	def(&c.MaxAbandoned, 64)
	def(&c.MaxFences, 64)
	def(&c.MaxTombs, 8)
}

// window is how long a link may stay silent, a handshake or a fence wait.
func (c *Config) window() Time { return c.HeartbeatInterval * Time(c.HeartbeatMisses) }

// Table is the state of this node's peers and links. It is not safe for
// concurrent use and does no I/O: the driver serialises Step calls and
// carries out the effects each returns.
type Table struct {
	cfg     Config
	now     Time
	stopped bool
	nextID  LinkID

	slots    map[string]*slot
	slotList []*slot // in creation order: iteration is deterministic
	links    map[LinkID]*link
	linkList []*link // in creation order; closed ones are compacted on Tick
	shaking  int     // accepted links in LinkHello

	fx []Effect // the effects of the current step
}

// slot is what the Table knows about one node name.
type slot struct {
	name string
	cur  *peer    // the live incarnation; nil if none
	tomb []uint64 // buried incarnations, oldest first, at most MaxTombs
}

// peer is one incarnation of another node.
type peer struct {
	slot     *slot
	inc      uint64
	poolSize int
	state    PeerState
	out      *link   // our native outbound link; nil if none
	links    []*link // every link registered to it (dialing ones included)
	pending  map[CallID]*call
	// abandoned are our links to it we closed while it lived: every link
	// dialed later starts with a fence naming them.
	abandoned []LinkID
	// dialed indexes its links to us by its id for them, until they end.
	dialed map[LinkID]*link
	// lost are its links to us we closed before reading them to the end
	// while it lived, at most MaxAbandoned, each until its fence naming
	// it arrives or the window passes.
	lost []lostLink
	pool *pool
}

// lostLink is a link of a peer to us (its id) we closed at at.
type lostLink struct {
	id LinkID
	at Time
}

// call is a pending call, pinned to the incarnation that took it.
type call struct {
	id    CallID
	state CallState
	link  *link // where it is queued or was written
}

// New returns an empty Table for cfg.
func New(cfg Config) *Table {
	cfg.defaults()
	return &Table{cfg: cfg, slots: make(map[string]*slot), links: make(map[LinkID]*link)}
}

// Step applies ev and returns what the driver must do. The slice is the
// Table's: valid until the next Step.
func (t *Table) Step(ev Event) []Effect {
	t.fx = t.fx[:0]
	if t.stopped {
		return t.fx
	}
	switch e := ev.(type) {
	case Tick:
		t.advance(e.Now)
		t.tick()
	case IdleCheck:
		t.advance(e.Now)
		t.idleCheck()
	case DiscoveryUp:
		t.discoveryUp(e)
	case DiscoveryDown:
		t.discoveryDown(e)
	case DialDone:
		t.dialDone(e)
	case Accepted:
		t.accepted(e)
	case HelloRead:
		t.helloRead(e)
	case FrameRead:
		t.frameRead(e)
	case LinkClosed:
		if l := t.links[e.Link]; l != nil {
			why := ReasonLinkClosed
			if e.Lost {
				why = ReasonLost
			}
			t.closeLink(l, why, false)
		}
	case Send:
		t.route(Frame{Kind: FrameSend, Sender: e.Sender, Seq: e.Seq}, e.Node, e.Inc)
	case CallIssued:
		t.route(Frame{Kind: FrameCall, Sender: e.Sender, Seq: e.Seq, Call: e.Call}, e.Node, e.Inc)
	case CallCancelled:
		t.cancel(e)
	case ReplySend:
		t.reply(e)
	case BuildPool:
		t.buildPool(e.Node)
	case TeardownPool:
		if s := t.slots[e.Node]; s != nil && s.cur != nil && s.cur.pool != nil {
			t.teardownPool(s.cur, ReasonIdle)
		}
	case Stop:
		t.stop()
	default:
		panic(fmt.Sprintf("peers: unknown event %T", ev))
	}
	return t.fx
}

func (t *Table) advance(now Time) {
	if now > t.now {
		t.now = now
	}
}

func (t *Table) emit(e Effect) { t.fx = append(t.fx, e) }

// slotFor returns the slot for name, creating it within MaxNames; nil
// past the bound.
func (t *Table) slotFor(name string) *slot {
	if s := t.slots[name]; s != nil {
		return s
	}
	if len(t.slots) >= t.cfg.MaxNames || name == t.cfg.Node {
		return nil
	}
	s := &slot{name: name}
	t.slots[name] = s
	t.slotList = append(t.slotList, s)
	return s
}

func (s *slot) buried(inc uint64) bool { return slices.Contains(s.tomb, inc) }

func (t *Table) bury(s *slot, inc uint64) {
	if s.buried(inc) {
		return
	}
	if len(s.tomb) >= t.cfg.MaxTombs {
		s.tomb = append(s.tomb[:0], s.tomb[1:]...)
	}
	s.tomb = append(s.tomb, inc)
}

func (t *Table) newPeer(s *slot, inc uint64, poolSize int) *peer {
	p := &peer{slot: s, inc: inc, poolSize: poolSize, state: PeerUp,
		pending: make(map[CallID]*call), dialed: make(map[LinkID]*link)}
	s.cur = p
	return p
}

func (t *Table) discoveryUp(e DiscoveryUp) {
	s := t.slotFor(e.Node)
	if s == nil || e.Inc == 0 || s.buried(e.Inc) {
		return
	}
	if p := s.cur; p != nil {
		if p.inc == e.Inc {
			return
		}
		if p.stillConnected(nil) {
			// Ours is linked: a listing is no evidence that it is gone
			// (a crashed incarnation stays listed beside its successor
			// until its TTL, and incarnations do not say which is
			// newer). A successor replaces it by its hello once its
			// links have closed, or its Down ends it.
			return
		}
		t.gone(p, ReasonSuperseded) // a newer incarnation is up
	}
	t.newPeer(s, e.Inc, e.PoolSize)
}

func (t *Table) discoveryDown(e DiscoveryDown) {
	s := t.slots[e.Node]
	if s == nil || e.Inc == 0 {
		return
	}
	t.bury(s, e.Inc)
	if s.cur != nil && s.cur.inc == e.Inc {
		t.gone(s.cur, ReasonDown)
	}
}

// stillConnected reports whether p may still be alive: up, with a link
// other than except that has not closed.
func (p *peer) stillConnected(except *link) bool {
	if p.state != PeerUp {
		return false
	}
	for _, l := range p.links {
		if l != except && l.state >= LinkHello {
			return true
		}
	}
	return false
}

// gone ends incarnation p: every call pinned to it fails, its pool is
// withdrawn, its links close, it leaves the table and is buried.
func (t *Table) gone(p *peer, why Reason) {
	if !p.state.End() {
		return
	}
	s := p.slot
	if s.cur == p {
		s.cur = nil
	}
	t.bury(s, p.inc)
	if pl := p.pool; pl != nil {
		p.pool = nil
		if pl.state >= PoolFencing {
			t.emit(Effect{Kind: EffWithdrawRoute, Node: s.name, Inc: p.inc, Reason: why})
		}
	}
	for _, l := range slices.Clone(p.links) {
		t.closeLink(l, why, true)
	}
	t.failAll(p, why)
	p.abandoned, p.dialed, p.lost = nil, nil, nil
	t.emit(Effect{Kind: EffPeerGone, Node: s.name, Inc: p.inc, Reason: why})
}

// failAll fails every call pending toward p, in call order.
func (t *Table) failAll(p *peer, why Reason) {
	if len(p.pending) == 0 {
		return
	}
	ids := make([]CallID, 0, len(p.pending))
	for id := range p.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		t.failCall(p, p.pending[id], why)
	}
}

// failCall ends c with the class its state implies: never written is
// not executed, written may have executed.
func (t *Table) failCall(p *peer, c *call, why Reason) {
	delete(p.pending, c.id)
	class := MayHaveExecuted
	if c.state == CallQueued {
		class = NotExecuted
		if t.cfg.Mutations.UnsentAsExecuted {
			class = Executed
		}
	}
	t.emit(Effect{Kind: EffFailCall, Call: c.id, Class: class, Reason: why})
}

// cancel ends a pending call its caller gave up on: not executed if it
// was never written (its queued frame is skipped at the write), may
// have executed if it was.
func (t *Table) cancel(e CallCancelled) {
	s := t.slots[e.Node]
	if s == nil || s.cur == nil || s.cur.inc != e.Inc {
		return
	}
	if c := s.cur.pending[e.Call]; c != nil {
		t.failCall(s.cur, c, ReasonCancelled)
	}
}

// stop says goodbye on every link, closes them all and fails every
// pending call: the node leaves.
func (t *Table) stop() {
	for _, s := range t.slotList {
		if p := s.cur; p != nil {
			for _, l := range slices.Clone(p.links) {
				if l.state.writable() {
					t.write(l, Frame{Kind: FrameGoodbye})
				}
			}
			p.state.Leave() // no abandoning: nothing follows
			for _, l := range slices.Clone(p.links) {
				t.closeLink(l, ReasonStopped, true)
			}
			t.failAll(p, ReasonStopped)
		}
	}
	for _, l := range slices.Clone(t.linkList) {
		if l.state != LinkEnded {
			t.closeLink(l, ReasonStopped, true)
		}
	}
	t.stopped = true
}
