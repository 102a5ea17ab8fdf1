package peers

import (
	"errors"
	"fmt"
)

// Reading reports whether the driver may read link id: false while a
// fence holds it (and for a link the Table does not know).
func (t *Table) Reading(id LinkID) bool {
	l := t.links[id]
	return l != nil && l.state != LinkHeld
}

// Current is the live incarnation of node, if one is known.
func (t *Table) Current(node string) (uint64, bool) {
	if s := t.slots[node]; s != nil && s.cur != nil && s.cur.state == PeerUp {
		return s.cur.inc, true
	}
	return 0, false
}

// LinkState is the state of link id; LinkEnded if it is not known.
func (t *Table) LinkState(id LinkID) LinkState {
	if l := t.links[id]; l != nil {
		return l.state
	}
	return LinkEnded
}

// PeerState is the state of incarnation inc of node; PeerGone if it is
// not in the table.
func (t *Table) PeerState(node string, inc uint64) PeerState {
	if s := t.slots[node]; s != nil && s.cur != nil && s.cur.inc == inc {
		return s.cur.state
	}
	return PeerGone
}

// Pending is the number of calls pending toward incarnation inc of node.
func (t *Table) Pending(node string, inc uint64) int {
	if s := t.slots[node]; s != nil && s.cur != nil && s.cur.inc == inc {
		return len(s.cur.pending)
	}
	return 0
}

// Now is the Table's logical time.
func (t *Table) Now() Time { return t.now }

// ErrInvariant is wrapped by every error Check returns.
var ErrInvariant = errors.New("peers: invariant broken")

// Check verifies the Table's own invariants: every bound of Config
// holds, nothing is pinned to an incarnation that is gone or buried,
// and the links and peers point at each other. The simulator runs it
// after every step; it costs O(peers + links + calls).
func (t *Table) Check() error {
	c := &t.cfg
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvariant, fmt.Sprintf(format, a...))
	}
	if len(t.slots) > c.MaxNames {
		return bad("%d names > MaxNames %d", len(t.slots), c.MaxNames)
	}
	if t.shaking < 0 || t.shaking > c.MaxHandshakes {
		return bad("%d handshakes (MaxHandshakes %d)", t.shaking, c.MaxHandshakes)
	}
	for _, l := range t.links {
		if got, want := l.word.Phase(), l.state.runtimePhase(); got != want {
			return bad("link %d is %v: the runtime's word for it says %v", l.id, l.state, got)
		}
	}
	for _, s := range t.slotList {
		if len(s.tomb) > c.MaxTombs {
			return bad("%s: %d tombs > MaxTombs", s.name, len(s.tomb))
		}
		p := s.cur
		if p == nil {
			continue
		}
		if p.state == PeerGone || s.buried(p.inc) {
			return bad("%s: incarnation %x is gone or buried but current", s.name, p.inc)
		}
		// Outbound links: a native one, a pool, and links still
		// finishing, each bounded by time; inbound by MaxLinksPerPeer.
		if len(p.links) > c.MaxLinksPerPeer+c.PoolLinks+1 {
			return bad("%s: %d links", s.name, len(p.links))
		}
		if len(p.pending) > c.MaxPending {
			return bad("%s: %d pending > MaxPending", s.name, len(p.pending))
		}
		if len(p.abandoned) > c.MaxAbandoned || len(p.lost) > c.MaxAbandoned {
			return bad("%s: %d abandoned > MaxAbandoned", s.name, len(p.abandoned))
		}
		for _, l := range p.links {
			if l.peer != p || t.links[l.id] != l {
				return bad("%s: link %d registered wrongly", s.name, l.id)
			}
			if len(l.outbox) > c.MaxQueued+1 || len(l.held) > c.MaxQueued || len(l.waitFor) > c.MaxFences {
				return bad("%s: link %d queues %d/%d, waits for %d", s.name, l.id, len(l.outbox), len(l.held), len(l.waitFor))
			}
		}
		for id, cl := range p.pending {
			if cl.link != nil && cl.link.state == LinkEnded {
				return bad("%s: call %d pinned to closed link %d", s.name, id, cl.link.id)
			}
		}
	}
	return nil
}

// PoolSize is this node's receiver pool size, as its hellos tell it.
func (t *Table) PoolSize() int { return t.cfg.PoolSize }
