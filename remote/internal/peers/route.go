package peers

// route sends f (a send or a call) to incarnation inc of name: through
// its pool when one is published, else its native link (dialed if
// there is none). A call is pinned to the incarnation first.
func (t *Table) route(f Frame, name string, inc uint64) {
	var p *peer
	if s := t.slots[name]; s != nil && s.cur != nil && s.cur.inc == inc && s.cur.state == PeerUp {
		p = s.cur
	}
	if p == nil {
		t.unroutable(f, ReasonNoPeer)
		return
	}
	if f.Kind == FrameCall {
		if len(p.pending) >= t.cfg.MaxPending || p.pending[f.Call] != nil {
			t.unroutable(f, ReasonOverloaded)
			return
		}
		p.pending[f.Call] = &call{id: f.Call, state: CallQueued}
	}
	if pl := p.pool; pl != nil && pl.state >= PoolFencing {
		t.enqueue(pl.links[f.Sender%uint64(len(pl.links))], f)
		return
	}
	t.enqueue(t.native(p), f)
}

// unroutable ends f before it was pinned anywhere.
func (t *Table) unroutable(f Frame, why Reason) {
	if f.Kind == FrameCall {
		class := NotExecuted
		if t.cfg.Mutations.UnsentAsExecuted {
			class = Executed
		}
		t.emit(Effect{Kind: EffFailCall, Call: f.Call, Class: class, Reason: why})
		return
	}
	t.emit(Effect{Kind: EffDeadLetter, Frame: f, Reason: why})
}

// native returns p's native outbound link, dialing one if needed.
func (t *Table) native(p *peer) *link {
	if p.out == nil {
		p.out = t.dial(p, RoleNative)
	}
	return p.out
}

// reply routes a call's reply to incarnation e.Inc of e.Node: into a
// pool only if it was built for that incarnation (the incarnation
// guard), else on the link the call came on, else any link of that
// incarnation, else it is a dead letter.
func (t *Table) reply(e ReplySend) {
	f := Frame{Kind: FrameReply, Call: e.Call, CallerInc: e.Inc}
	s := t.slots[e.Node]
	if s == nil {
		t.emit(Effect{Kind: EffDeadLetter, Frame: f, Reason: ReasonStale})
		return
	}
	if p := s.cur; p != nil && p.pool != nil && p.pool.state >= PoolFencing && (p.inc == e.Inc || t.cfg.Mutations.StaleReply) {
		pl := p.pool
		t.enqueue(pl.links[uint64(e.Call)%uint64(len(pl.links))], f)
		return
	}
	if l := t.links[e.Link]; l != nil && l.peer != nil && l.peer.inc == e.Inc && l.state.writable() {
		t.write(l, f)
		return
	}
	if p := s.cur; p != nil && p.inc == e.Inc {
		for _, l := range p.links {
			if l.state.writable() && !t.heldByPool(l) {
				t.write(l, f)
				return
			}
		}
	}
	t.emit(Effect{Kind: EffDeadLetter, Frame: f, Reason: ReasonStale})
}
