package peers

import "slices"

// pool is the proxy pool toward one peer incarnation (sender side).
type pool struct {
	state PoolState
	links []*link
	// barrier is the native link whose pong of ping number barrierN
	// releases the pool (PoolFencing).
	barrier  *link
	barrierN uint64
}

func (t *Table) buildPool(name string) {
	s := t.slots[name]
	if s == nil || s.cur == nil {
		return
	}
	p := s.cur
	if p.state != PeerUp || p.poolSize <= 0 || p.pool != nil || len(p.links)+t.cfg.PoolLinks > t.cfg.MaxLinksPerPeer {
		return
	}
	pl := &pool{state: PoolBuilding}
	p.pool = pl
	for range t.cfg.PoolLinks {
		pl.links = append(pl.links, t.dial(p, RolePool))
	}
}

// poolLinkOpen publishes p's pool once all its links are open, behind a
// barrier on the native link: a ping written after every native frame so
// far, whose pong says the peer has delivered them all.
func (t *Table) poolLinkOpen(p *peer) {
	pl := p.pool
	for _, l := range pl.links {
		if l.state != LinkOpen {
			return
		}
	}
	pl.state = PoolFencing
	t.emit(Effect{Kind: EffPublishRoute, Node: p.slot.name, Inc: p.inc, Links: linkIDs(pl.links)})
	n := p.out
	if t.cfg.Mutations.SkipTakeoverFence || n == nil {
		t.releasePool(p)
		return
	}
	n.pings++
	pl.barrier, pl.barrierN = n, n.pings
	if n.state.writable() {
		t.write(n, Frame{Kind: FramePing})
	} else {
		n.outbox = append(n.outbox, Frame{Kind: FramePing}) // written when it opens, after what it queued
	}
}

func (t *Table) pongRead(p *peer, l *link) {
	if pl := p.pool; pl != nil && pl.state == PoolFencing && pl.barrier == l && l.pongs >= pl.barrierN {
		t.releasePool(p)
	}
}

// releasePool opens the pool: what its links held is written.
func (t *Table) releasePool(p *peer) {
	pl := p.pool
	pl.state, pl.barrier = PoolOpen, nil
	for _, l := range pl.links {
		q := l.held
		l.held = nil
		for _, f := range q {
			t.write(l, f)
		}
	}
}

// heldByPool reports whether l is a pool link behind its pool's fence.
func (t *Table) heldByPool(l *link) bool {
	pl := l.peer.pool
	return l.role == RolePool && l.outbound && pl != nil && pl.state == PoolFencing && slices.Contains(pl.links, l)
}

// teardownPool withdraws p's pool while p lives: traffic takes the native
// path, behind a fence naming the pool's links, which finish with a
// half-close so what they carried arrives. What they held fails unsent.
func (t *Table) teardownPool(p *peer, why Reason) {
	pl := p.pool
	p.pool = nil
	if pl.state >= PoolFencing {
		t.emit(Effect{Kind: EffWithdrawRoute, Node: p.slot.name, Inc: p.inc, Reason: why})
	}
	var fence []*link
	for _, l := range pl.links {
		t.dropQueued(l, why)
		if l.state == LinkOpen {
			fence = append(fence, l)
		}
	}
	t.abandon(p, fence)
	for _, l := range pl.links {
		switch {
		case l.state == LinkEnded:
		case l.state == LinkOpen:
			l.enter(LinkFenced, t.now)
			t.emit(Effect{Kind: EffClose, Link: l.id, Half: true, Reason: why})
		default:
			t.closeLink(l, why, true)
		}
	}
}

func linkIDs(ls []*link) []LinkID {
	ids := make([]LinkID, len(ls))
	for i, l := range ls {
		ids[i] = l.id
	}
	return ids
}
