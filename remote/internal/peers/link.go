package peers

import "slices"

// link is one connection, in one state.
type link struct {
	id       LinkID
	state    LinkState
	role     Role
	outbound bool
	peer     *peer  // the incarnation it is registered to (dialed for, when outbound)
	dialID   LinkID // the dialer's id (ours when outbound)
	since    Time   // when it entered its state
	lastRead Time   // last time something was read (or it was held)
	lastPing Time
	lastData Time     // last data frame either way (idle)
	outbox   []Frame  // written when it opens
	held     []Frame  // pool data behind the pool's fence
	pings    uint64   // pings enqueued
	pongs    uint64   // pongs read
	waitFor  []LinkID // held: the peer's links (dialer ids) whose readers must end first
	// word is the runtime's view of the link (LinkWord), marked as the
	// runtime marks it at each change of state; Check holds its Phase to
	// state.
	word LinkWord
}

// enter moves l to state s at now, and marks its word as the runtime
// marks a link's there: started when it opens, fenced and half-closed
// when a pool torn down fences it, an idle close on either side, closed.
// A held link is open to the runtime (its reader waits; its word does
// not change).
func (l *link) enter(s LinkState, now Time) {
	l.state, l.since = s, now
	switch s {
	case LinkOpen:
		l.word.MarkStarted()
	case LinkFenced:
		l.word.MarkFenced()
		l.word.MarkHalfClosed()
	case LinkIdleClosing:
		l.word.MarkIdleClosing()
	case LinkPeerIdle:
		l.word.MarkPeerIdle()
	case LinkEnded:
		l.word.MarkClosed()
	}
}

func (t *Table) addLink(l *link) {
	l.since, l.lastRead, l.lastPing, l.lastData = t.now, t.now, t.now, t.now
	t.links[l.id] = l
	t.linkList = append(t.linkList, l)
}

// dial starts an outbound link of role to p.
func (t *Table) dial(p *peer, role Role) *link {
	t.nextID++
	l := &link{id: t.nextID, state: LinkDialing, role: role, outbound: true, peer: p, dialID: t.nextID}
	t.addLink(l)
	p.links = append(p.links, l)
	t.emit(Effect{Kind: EffDial, Link: l.id, Node: p.slot.name, Role: role, Inc: p.inc})
	return l
}

func (t *Table) dialDone(e DialDone) {
	l := t.links[e.Link]
	if l == nil || l.state != LinkDialing {
		return
	}
	if e.Failed {
		t.closeLink(l, ReasonDialFailed, false)
		return
	}
	l.enter(LinkHello, t.now)
	l.lastRead = t.now
	t.emit(Effect{Kind: EffWrite, Link: l.id, Frame: Frame{Kind: FrameHello, Hello: t.hello(l)}})
}

func (t *Table) hello(l *link) *Hello {
	return &Hello{Node: t.cfg.Node, Inc: t.cfg.Inc, Role: l.role, DialID: l.dialID, PoolSize: t.cfg.PoolSize}
}

func (t *Table) accepted(e Accepted) {
	if e.Link&InboundBit == 0 || t.links[e.Link] != nil {
		panic("peers: Accepted needs a fresh id with InboundBit set")
	}
	l := &link{id: e.Link, state: LinkHello}
	t.addLink(l)
	t.shaking++ // until it opens or closes
	if t.shaking > t.cfg.MaxHandshakes {
		t.closeLink(l, ReasonOverloaded, true)
	}
}

func (t *Table) helloRead(e HelloRead) {
	l := t.links[e.Link]
	if l == nil || l.state != LinkHello {
		return
	}
	h := e.Hello
	if l.outbound {
		t.welcomed(l, h)
		return
	}
	s := t.slotFor(h.Node)
	if s == nil || h.Inc == 0 || s.buried(h.Inc) {
		t.closeLink(l, ReasonRefused, true)
		return
	}
	p := s.cur
	if p == nil || p.inc != h.Inc {
		if p != nil && p.stillConnected(nil) {
			t.closeLink(l, ReasonRefused, true) // admitted once the old one's links close or go silent
			return
		}
		if p != nil {
			t.gone(p, ReasonSuperseded)
		}
		p = t.newPeer(s, h.Inc, h.PoolSize)
	}
	if len(p.links) >= t.cfg.MaxLinksPerPeer || p.state != PeerUp {
		t.closeLink(l, ReasonRefused, true)
		return
	}
	l.peer, l.dialID, l.role = p, h.DialID, h.Role
	p.links = append(p.links, l)
	if old := p.dialed[h.DialID]; old != nil {
		t.closeLink(old, ReasonRefused, true) // a dialer reusing an id: the old one is over
	}
	p.dialed[h.DialID] = l
	t.emit(Effect{Kind: EffWrite, Link: l.id, Frame: Frame{Kind: FrameWelcome, Hello: t.hello(l)}})
	t.open(l)
}

// welcomed handles the acceptor's welcome on a link we dialed.
func (t *Table) welcomed(l *link, h Hello) {
	p := l.peer
	if h.Inc == p.inc && p.state == PeerUp {
		t.open(l)
		return
	}
	s := p.slot
	if l.role == RolePool || h.Node != s.name || h.Inc == 0 || s.buried(h.Inc) || p.state != PeerUp || p.stillConnected(l) {
		t.closeLink(l, ReasonOtherInc, true)
		return
	}
	// It restarted: the dial reached its newer incarnation. What was
	// queued on the link was for the old one.
	p.links = slices.DeleteFunc(p.links, func(m *link) bool { return m == l })
	if p.out == l {
		p.out = nil
	}
	t.dropQueued(l, ReasonSuperseded)
	t.gone(p, ReasonSuperseded)
	np := t.newPeer(s, h.Inc, h.PoolSize)
	l.peer = np
	np.links = append(np.links, l)
	np.out = l
	t.open(l)
}

// open makes l open: a dialed link first writes the fences its peer's
// abandoned links need, then what it queued.
func (t *Table) open(l *link) {
	if !l.outbound {
		t.shaking--
	}
	l.enter(LinkOpen, t.now)
	l.lastRead = t.now
	if !l.outbound {
		return
	}
	if ab := l.peer.abandoned; len(ab) > 0 {
		t.write(l, Frame{Kind: FrameFence, Links: slices.Clone(ab)})
	}
	q := l.outbox
	l.outbox = nil
	for _, f := range q {
		t.write(l, f)
	}
	if pl := l.peer.pool; pl != nil && pl.state == PoolBuilding && slices.Contains(pl.links, l) {
		t.poolLinkOpen(l.peer)
	}
}

// write emits a Write of f on l; a call written is marked so.
func (t *Table) write(l *link, f Frame) {
	switch f.Kind {
	case FramePing:
		l.lastPing = t.now
	case FrameCall:
		c := l.peer.pending[f.Call]
		if c == nil && !t.cfg.Mutations.WriteCancelled {
			return // it ended while queued (cancelled): cut, never written
		}
		if c != nil {
			c.state, c.link = CallWritten, l
		}
		l.lastData = t.now
	case FrameSend, FrameReply:
		l.lastData = t.now
	}
	t.emit(Effect{Kind: EffWrite, Link: l.id, Frame: f})
}

// enqueue writes f on l now if it can, or queues it (bounded).
func (t *Table) enqueue(l *link, f Frame) {
	if l.state.writable() && !t.heldByPool(l) {
		t.write(l, f)
		return
	}
	q := &l.outbox
	if l.state.writable() {
		q = &l.held
	}
	if len(*q) >= t.cfg.MaxQueued || (l.state != LinkDialing && l.state != LinkHello && !l.state.writable()) {
		t.drop(l.peer, f, ReasonOverloaded)
		return
	}
	if f.Kind == FrameCall {
		if c := l.peer.pending[f.Call]; c != nil {
			c.state, c.link = CallQueued, l
		}
	}
	*q = append(*q, f)
}

// drop ends f unsent: a call fails (not executed), a send or reply is a
// dead letter.
func (t *Table) drop(p *peer, f Frame, why Reason) {
	if f.Kind == FrameCall {
		if c := p.pending[f.Call]; c != nil {
			t.failCall(p, c, why)
		}
		return
	}
	if f.Kind == FrameReply && p.state != PeerGone {
		// Its caller waits for it (there is no default timeout): a
		// reply a torn-down pool held takes a native link instead, or
		// any other link of the caller's that writes (the runtime's
		// replyLink: the caller reads replies on its pool links too).
		for _, l := range p.links {
			if l.role == RoleNative && l.state.writable() {
				t.write(l, f)
				return
			}
		}
		for _, l := range p.links {
			if l.state.writable() && !t.heldByPool(l) {
				t.write(l, f)
				return
			}
		}
	}
	if f.Kind == FrameSend || f.Kind == FrameReply {
		t.emit(Effect{Kind: EffDeadLetter, Frame: f, Reason: why})
	}
}

// dropQueued drops what l queued, unsent.
func (t *Table) dropQueued(l *link, why Reason) {
	for _, q := range [][]Frame{l.outbox, l.held} {
		for _, f := range q {
			t.drop(l.peer, f, why)
		}
	}
	l.outbox, l.held = nil, nil
}

func (t *Table) frameRead(e FrameRead) {
	l := t.links[e.Link]
	if l == nil || l.peer == nil || l.state < LinkOpen {
		return
	}
	if l.state == LinkHeld {
		panic("peers: FrameRead on a held link (the driver must check Reading)")
	}
	p, f := l.peer, e.Frame
	l.lastRead = t.now
	switch f.Kind {
	case FramePing:
		if l.state.writable() {
			t.write(l, Frame{Kind: FramePong})
		}
	case FramePong:
		l.pongs++
		t.pongRead(p, l)
	case FrameSend, FrameCall:
		l.lastData = t.now
		t.emit(Effect{Kind: EffDeliver, Link: l.id, Frame: f})
	case FrameReply:
		l.lastData = t.now
		c := p.pending[f.Call]
		if c == nil {
			t.emit(Effect{Kind: EffLateReply, Call: f.Call})
			return
		}
		delete(p.pending, c.id)
		t.emit(Effect{Kind: EffDeliver, Link: l.id, Frame: f})
	case FrameFence:
		named := func(ll lostLink) bool { return slices.Contains(f.Links, ll.id) }
		if slices.ContainsFunc(p.lost, named) {
			// It abandoned a link we had closed before reading it to
			// the end: replies it wrote there are lost.
			p.lost = slices.DeleteFunc(p.lost, named)
			t.failWritten(p, nil, ReasonLost)
		}
		for _, id := range f.Links {
			if old := p.dialed[id]; old != nil && old != l && !slices.Contains(l.waitFor, id) && len(l.waitFor) < t.cfg.MaxFences {
				l.waitFor = append(l.waitFor, id)
			}
		}
		if len(l.waitFor) > 0 {
			l.enter(LinkHeld, t.now)
		}
	case FrameGoodbye:
		p.state.Leave()
	case FrameIdleClose:
		if !l.outbound {
			l.enter(LinkPeerIdle, t.now)
		}
	}
}

// closeLink ends l. An outbound link closing while its peer lives is
// abandoned first (fenced on the others), before anything rerouted
// because it closed can be written.
func (t *Table) closeLink(l *link, why Reason, emitClose bool) {
	if l.state == LinkEnded {
		return
	}
	prev := l.state
	if prev == LinkHello && !l.outbound && l.peer == nil {
		t.shaking--
	}
	l.enter(LinkEnded, t.now)
	delete(t.links, l.id)
	if emitClose {
		t.emit(Effect{Kind: EffClose, Link: l.id, Reason: why})
	}
	p := l.peer
	if p == nil {
		return
	}
	if l.outbound && (prev == LinkOpen || prev == LinkHeld) {
		t.abandon(p, []*link{l})
	}
	p.links = slices.DeleteFunc(p.links, func(m *link) bool { return m == l })
	if p.out == l {
		p.out = nil
	}
	if !l.outbound && p.dialed[l.dialID] == l {
		delete(p.dialed, l.dialID)
		t.readerEnded(p, l.dialID)
	}
	t.dropQueued(l, why)
	ids := make([]CallID, 0)
	for id, c := range p.pending {
		if c.link == l {
			ids = append(ids, id)
		}
	}
	// A reply may take any link of its callee: one that ended uncleanly
	// may have lost replies to calls written on the others, which would
	// then wait for ever. They may have executed.
	slices.Sort(ids)
	for _, id := range ids {
		t.failCall(p, p.pending[id], why)
	}
	if p.state == PeerUp && (emitClose || why == ReasonLost) {
		t.failWritten(p, l, why)
		if !l.outbound {
			// It may write replies on it until it learns: its fence
			// naming it says they were lost (FrameFence).
			p.lost = append(p.lost, lostLink{id: l.dialID, at: t.now})
			if n := len(p.lost) - t.cfg.MaxAbandoned; n > 0 {
				p.lost = append(p.lost[:0], p.lost[n:]...)
			}
		}
	}
	if pl := p.pool; pl != nil {
		if slices.Contains(pl.links, l) {
			t.teardownPool(p, ReasonPoolTornDown)
		} else if pl.state == PoolFencing && pl.barrier == l {
			if p.state == PeerUp {
				t.releasePool(p) // nothing more comes on it, and abandon fenced it above
			} else {
				// No fence was written (it is leaving, or we stop): what the
				// pool holds could overtake what the native link carried.
				t.teardownPool(p, why)
			}
		}
	}
	if p.state == PeerLeaving && len(p.links) == 0 {
		t.gone(p, ReasonGoodbye)
	}
}

// abandon fences ls, outbound links of p we stop using while p lives:
// every other open outbound link carries a fence naming them, and every
// link dialed later starts with one.
func (t *Table) abandon(p *peer, ls []*link) {
	if p.state != PeerUp {
		return // no traffic to it follows
	}
	ids := make([]LinkID, 0, len(ls))
	for _, l := range ls {
		ids = append(ids, l.dialID)
	}
	p.abandoned = append(p.abandoned, ids...)
	if n := len(p.abandoned) - t.cfg.MaxAbandoned; n > 0 {
		p.abandoned = append(p.abandoned[:0], p.abandoned[n:]...)
	}
	for _, m := range p.links {
		if m.outbound && m.state.writable() && !slices.Contains(ls, m) {
			t.write(m, Frame{Kind: FrameFence, Links: ids})
		}
	}
}

// readerEnded releases the links held for the peer's link id.
func (t *Table) readerEnded(p *peer, id LinkID) {
	for _, m := range p.links {
		if m.state == LinkHeld {
			m.waitFor = slices.DeleteFunc(m.waitFor, func(w LinkID) bool { return w == id })
			if len(m.waitFor) == 0 {
				m.enter(LinkOpen, t.now)
				m.lastRead = t.now
			}
		}
	}
}

// tick writes heartbeats and closes what waited or was silent too long.
func (t *Table) tick() {
	w := t.cfg.window()
	t.linkList = slices.DeleteFunc(t.linkList, func(l *link) bool { return l.state == LinkEnded })
	for _, l := range slices.Clone(t.linkList) {
		if l.state == LinkEnded || l.state == LinkDialing {
			continue
		}
		if l.state == LinkHeld {
			l.lastRead = t.now // waiting on ourselves, not on the peer
			if t.now-l.since > w {
				for _, id := range slices.Clone(l.waitFor) {
					if old := l.peer.dialed[id]; old != nil {
						t.closeLink(old, ReasonFenceTimeout, true)
					}
				}
			}
			continue
		}
		if l.state == LinkHello && t.now-l.since > w {
			t.closeLink(l, ReasonHandshake, true)
			continue
		}
		if t.now-l.lastRead > w {
			t.closeLink(l, ReasonSilent, true)
			continue
		}
		if l.state == LinkOpen && t.now-l.lastPing >= t.cfg.HeartbeatInterval {
			l.pings++
			t.write(l, Frame{Kind: FramePing})
		}
	}
	// A peer writes replies on a link we closed until it learns (its
	// reader ends, or the link falls silent for it), so calls written
	// after we closed it may lose theirs too. Its fence naming the link
	// says so, but it writes one only on another outbound link to us,
	// and it may have none and dial none: the window bounds the wait.
	for _, s := range t.slotList {
		p := s.cur
		if p == nil || p.state != PeerUp || len(p.lost) == 0 {
			continue
		}
		expired := func(ll lostLink) bool { return t.now-ll.at > w }
		if slices.ContainsFunc(p.lost, expired) {
			p.lost = slices.DeleteFunc(p.lost, expired)
			t.failWritten(p, nil, ReasonLost)
		}
	}
}

// idleCheck closes native outbound links idle for IdleTimeout while
// nothing was pinned to their peer and no pool is built or being built.
func (t *Table) idleCheck() {
	if t.cfg.IdleTimeout <= 0 {
		return
	}
	for _, s := range t.slotList {
		p := s.cur
		if p == nil || p.state != PeerUp || p.out == nil || p.out.state != LinkOpen {
			continue
		}
		l := p.out
		if len(p.pending) > 0 || p.pool != nil || len(l.outbox) > 0 {
			l.lastData = t.now // time pinned counts as busy
			continue
		}
		if t.now-l.lastData < t.cfg.IdleTimeout {
			continue
		}
		t.write(l, Frame{Kind: FrameIdleClose})
		l.enter(LinkIdleClosing, t.now)
		p.out = nil
		t.abandon(p, []*link{l})
		t.emit(Effect{Kind: EffClose, Link: l.id, Half: true, Reason: ReasonIdle})
	}
}

// failWritten fails every call written to p but on except: their replies
// may have been lost (they may have executed).
func (t *Table) failWritten(p *peer, except *link, why Reason) {
	var ids []CallID
	for id, c := range p.pending {
		if c.state == CallWritten && c.link != except {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		t.failCall(p, p.pending[id], why)
	}
}
