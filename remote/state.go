package remote

import "github.com/mailroom-go/mailroom/remote/internal/peers"

// A link's state is its st, a peers.LinkWord: the core's word, changed
// only by its transitions (remote/internal/peers/word.go).

// A peer incarnation's state is its phase (peers.PeerState): up, leaving
// (it said goodbye on a link: nothing new is routed to it, and it is gone
// when its last link ends), gone. It only moves forward, under the
// peer's mu, by the core's two transitions (Leave, End), which the
// Table the simulator checks makes too.

// markLeavingLocked: it said goodbye. Under p.mu.
func (p *peer) markLeavingLocked() { p.phase.Leave() }

// markGoneLocked makes it gone, once: true for the caller that did.
// Under p.mu.
func (p *peer) markGoneLocked() bool { return p.phase.End() }

// goneLocked: it is gone. Under p.mu.
func (p *peer) goneLocked() bool { return p.phase == peers.PeerGone }

// endingLocked: it is gone or leaving, so nothing new goes to it. Under p.mu.
func (p *peer) endingLocked() bool { return p.phase != peers.PeerUp }

// A slot's marks say why the node is kept in view and linked: listed
// (discovery reports it up), pinned (the user connected to it by
// address), kept (Connect or the seed keeper wants it linked: never
// closed idle, idle.go): a peers.NameMarks, set by the core's
// transitions, called only here. They, its current incarnation and its
// running dial change only here, under the node's mu.

// markListed: discovery reports it up.
func (s *slot) markListed() { s.marks.List() }

// relisted: after an incarnation's Down, it is listed while another is.
func (s *slot) relisted() { s.marks.Relist(len(s.ups) > 0) }

// pin: the user connected to it at addr, which holds for any incarnation.
func (s *slot) pin(addr string) {
	s.addr, s.addrInc = addr, 0
	s.marks.Pin()
}

// markKept: it is to stay linked.
func (s *slot) markKept() { s.marks.Keep() }

// incarnate makes p its current incarnation.
func (s *slot) incarnate(p *peer) { s.cur = p }

// beginDial records the dial of its native link that starts, to addr.
func (s *slot) beginDial(addr string) *dialAttempt {
	s.dialing = &dialAttempt{addr: addr, done: make(chan struct{})}
	return s.dialing
}

// endDial: its dial is over.
func (s *slot) endDial() { s.dialing = nil }
