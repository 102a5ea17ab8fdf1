package remote

import (
	"sync/atomic"

	"github.com/mailroom-go/mailroom/remote/internal/peers"
)

// linkState is a link's state: one word, changed only by the transitions
// in this file. It records where the link is in its life (started,
// closing for idleness, half-closed, closed) and what was said on it
// (the peer's goodbye or idle close, our fence naming it), which is more
// than one enum can say, since those combine: a link we close for
// idleness may still hear the peer's goodbye. phase folds it into the
// core's enum (peers.LinkState), which the simulator checks.
//
// The bits a writer and the closer must see together with the link's
// buffer (closed, halfClosed, finIdle) are changed under the link's mu
// and read under it, as the buffer is; the others are changed and read
// without a lock. Every change is atomic, so each reader sees a whole
// word.
type linkState struct{ w atomic.Uint32 }

const (
	lsStarted    uint32 = 1 << iota // its reader and writer run (start)
	lsFenced                        // a fence naming it went on the peer's other links (supersede.go, idle.go)
	lsIdleClosed                    // we close it for idleness: writers take a new link (idle.go)
	lsPeerIdle                      // its dialer closes it for idleness: we write nothing more on it (idle.go)
	lsGoodbye                       // the peer said goodbye on it
	lsClean                         // ... and its goodbye was clean
	lsHalfClosed                    // we write nothing more on it: our goodbye, an idle close, a finished pool link; under mu
	lsFinIdle                       // the writer half-closes it once its buffer is written (idle.go); under mu
	lsClosed                        // closed (close); under mu
)

func (s *linkState) has(bits uint32) bool { return s.w.Load()&bits != 0 }

// markStarted: its reader and writer run.
func (s *linkState) markStarted() { s.w.Or(lsStarted) }

// markFenced records that a fence naming the link is written, once:
// true for the caller that marked it.
func (s *linkState) markFenced() bool { return s.w.Or(lsFenced)&lsFenced == 0 }

// markPeerIdle: its dialer said it closes it for idleness.
func (s *linkState) markPeerIdle() { s.w.Or(lsPeerIdle) }

// markGoodbye: the peer said goodbye on it, cleanly or not.
func (s *linkState) markGoodbye(clean bool) {
	bits := lsGoodbye
	if clean {
		bits |= lsClean
	}
	s.w.Or(bits)
}

// markIdleClosing: we close it for idleness; the writer half-closes it
// once what it holds is written. All three bits show at once: a writer
// refused for the half-close sees it was for idleness and retries on
// another link (retryFresh). Under mu.
func (s *linkState) markIdleClosing() {
	s.w.Or(lsIdleClosed | lsHalfClosed | lsFinIdle)
}

// takeFinIdle reports, once, that the writer is to half-close the link
// (its idle close is written). Under mu.
func (s *linkState) takeFinIdle() bool { return s.w.And(^lsFinIdle)&lsFinIdle != 0 }

// markHalfClosed: we write nothing more on it. Under mu.
func (s *linkState) markHalfClosed() { s.w.Or(lsHalfClosed) }

// markClosed closes it, once: true for the caller that closed it. Under mu.
func (s *linkState) markClosed() bool { return s.w.Or(lsClosed)&lsClosed == 0 }

// closedLocked: closed. Under mu.
func (s *linkState) closedLocked() bool { return s.has(lsClosed) }

// refusesLocked reports whether the link takes no more frames: closed,
// half-closed, or the peer said goodbye on it. Under mu.
func (s *linkState) refusesLocked() bool { return s.has(lsClosed | lsHalfClosed | lsGoodbye) }

// goodbye reports whether the peer said goodbye on it, and whether
// cleanly.
func (s *linkState) goodbye() (said, clean bool) {
	w := s.w.Load()
	return w&lsGoodbye != 0, w&lsClean != 0
}

// phase is the link's state as the core names it. A link closing for
// idleness on either side is in that phase until it closes; a fenced
// link we half-closed is fenced; anything else that runs is open.
func (s *linkState) phase() peers.LinkState {
	w := s.w.Load()
	switch {
	case w&lsClosed != 0:
		return peers.LinkEnded
	case w&lsStarted == 0:
		return peers.LinkHello
	case w&lsIdleClosed != 0:
		return peers.LinkIdleClosing
	case w&lsPeerIdle != 0:
		return peers.LinkPeerIdle
	case w&lsFenced != 0 && w&lsHalfClosed != 0:
		return peers.LinkFenced
	}
	return peers.LinkOpen
}

// A peer incarnation's state is its phase (peers.PeerState): up, leaving
// (it said goodbye on a link: nothing new is routed to it, and it is gone
// when its last link ends), gone. It only moves forward, under the
// peer's mu, by the two transitions below.

// markLeavingLocked: it said goodbye. Under p.mu.
func (p *peer) markLeavingLocked() {
	if p.phase == peers.PeerUp {
		p.phase = peers.PeerLeaving
	}
}

// markGoneLocked makes it gone, once: true for the caller that did.
// Under p.mu.
func (p *peer) markGoneLocked() bool {
	if p.phase == peers.PeerGone {
		return false
	}
	p.phase = peers.PeerGone
	return true
}

// goneLocked: it is gone. Under p.mu.
func (p *peer) goneLocked() bool { return p.phase == peers.PeerGone }

// endingLocked: it is gone or leaving, so nothing new goes to it. Under p.mu.
func (p *peer) endingLocked() bool { return p.phase != peers.PeerUp }

// A slot's marks say why the node is kept in view and linked: listed
// (discovery reports it up), pinned (the user connected to it by
// address), kept (Connect or the seed keeper wants it linked: never
// closed idle, idle.go). They, its current incarnation and its running
// dial change only here, under the node's mu.

// markListed: discovery reports it up.
func (s *slot) markListed() { s.listed = true }

// relisted: after an incarnation's Down, it is listed while another is.
func (s *slot) relisted() { s.listed = len(s.ups) > 0 }

// pin: the user connected to it at addr, which holds for any incarnation.
func (s *slot) pin(addr string) { s.addr, s.addrInc, s.pinned = addr, 0, true }

// markKept: it is to stay linked.
func (s *slot) markKept() { s.kept = true }

// incarnate makes p its current incarnation.
func (s *slot) incarnate(p *peer) { s.cur = p }

// beginDial records the dial of its native link that starts, to addr.
func (s *slot) beginDial(addr string) *dialAttempt {
	s.dialing = &dialAttempt{addr: addr, done: make(chan struct{})}
	return s.dialing
}

// endDial: its dial is over.
func (s *slot) endDial() { s.dialing = nil }
