package remote

import (
	"strings"
	"sync/atomic"
)

// linkState is a link's state: one word, changed only by the functions
// in this file. A link is registered, then started (its reader and
// writer run); while it is up it may be fenced (abandoned while its peer
// lives: the other links carry a fence naming it), closed for idleness by
// us (the idle-close frame is its last) or by its dialer, told goodbye,
// and have its writing side shut (a goodbye's lingering close, a pool
// link finishing, an idle close once written); it ends closed. What it
// was before it closed stays readable: why it closed decides how what
// was pinned to it fails (peer.failOnLink, retryFresh, endOfIdle).
//
// The core's link states (remote/internal/peers) map onto it: LinkHello
// is registered and not started, LinkOpen started, LinkFenced fenced
// with the writing side shut, LinkIdleClosing idle-closed, LinkPeerIdle
// peer-idle, LinkEnded closed.
//
// Transitions that must order against the link's buffer (closing, the
// writing side, the idle close) are made under link.mu, so a writer that
// holds it sees them settled; the others (started, fenced, peer-idle,
// goodbye) stand alone. Every reader is lock-free.
type linkState struct{ w atomic.Uint32 }

const (
	lsStarted        uint32 = 1 << iota // its reader and writer run (link.start)
	lsFenced                            // abandoned while its peer lives; its id is in peer.abandoned
	lsWriteShut                         // nothing more is written on it (halfClose, finish, an idle close)
	lsIdleFin                           // closed idle: the writer half-closes once the buffer is written
	lsIdleClosed                        // we closed it for idleness: writers take a new link
	lsPeerIdle                          // its dialer closes it for idleness: it is no control link
	lsGoodbyeClean                      // the peer said a clean goodbye on it
	lsGoodbyeUnclean                    // the peer said an unclean goodbye on it
	lsClosed                            // ended
)

// lsRefuses are the states in which the link takes no frame.
const lsRefuses = lsClosed | lsWriteShut | lsGoodbyeClean | lsGoodbyeUnclean

func (s *linkState) has(bits uint32) bool { return s.w.Load()&bits != 0 }

// started: the link's goroutines run.
func (s *linkState) started() bool { return s.has(lsStarted) }

// closed: the link has ended.
func (s *linkState) closed() bool { return s.has(lsClosed) }

// writeShut: its writing side is shut; it is read to its end.
func (s *linkState) writeShut() bool { return s.has(lsWriteShut) }

// refuses: it takes no frame (closed, its writing side shut, or the peer
// said goodbye on it).
func (s *linkState) refuses() bool { return s.has(lsRefuses) }

// fenced: abandoned while its peer lives.
func (s *linkState) fenced() bool { return s.has(lsFenced) }

// idleClosed: we closed it for idleness.
func (s *linkState) idleClosed() bool { return s.has(lsIdleClosed) }

// peerIdle: its dialer closes it for idleness.
func (s *linkState) peerIdle() bool { return s.has(lsPeerIdle) }

// goodbye is what the peer said on it: 0 (nothing), goodbyeClean or
// goodbyeUnclean.
func (s *linkState) goodbye() int32 {
	switch w := s.w.Load(); {
	case w&lsGoodbyeClean != 0:
		return goodbyeClean
	case w&lsGoodbyeUnclean != 0:
		return goodbyeUnclean
	}
	return 0
}

// set adds bits unless any of unless is there; it reports whether it
// did. The one place the word changes.
func (s *linkState) set(bits, unless uint32) bool {
	for {
		w := s.w.Load()
		if w&unless != 0 {
			return false
		}
		if s.w.CompareAndSwap(w, w|bits) {
			return true
		}
	}
}

// start marks the link started. Once.
func (s *linkState) start() bool { return s.set(lsStarted, lsStarted) }

// fence marks it abandoned while its peer lives; false if it was
// already (its id is recorded once).
func (s *linkState) fence() bool { return s.set(lsFenced, lsFenced) }

// saidGoodbye records the peer's goodbye on it (the first one stands).
func (s *linkState) saidGoodbye(clean bool) {
	bit := lsGoodbyeUnclean
	if clean {
		bit = lsGoodbyeClean
	}
	s.set(bit, lsGoodbyeClean|lsGoodbyeUnclean)
}

// saidIdle records that its dialer closes it for idleness.
func (s *linkState) saidIdle() { s.set(lsPeerIdle, 0) }

// shutWriteLocked shuts its writing side; false if it was closed or
// already shut. Under link.mu.
func (s *linkState) shutWriteLocked() bool { return s.set(lsWriteShut, lsWriteShut|lsClosed) }

// idleCloseLocked starts our idle close: idle-closed first (a writer
// refused from now on retries on a fresh link: retryFresh), its writing
// side shut, and the writer to half-close once the idle-close frame is
// written. False if it takes no frames already. Under link.mu.
func (s *linkState) idleCloseLocked() bool {
	return s.set(lsIdleClosed|lsWriteShut|lsIdleFin, lsRefuses)
}

// idleWrittenLocked reports, once, that the idle close's frame has been
// written: the writer half-closes then. Under link.mu, with the buffer
// empty.
func (s *linkState) idleWrittenLocked() bool {
	for {
		w := s.w.Load()
		if w&lsIdleFin == 0 {
			return false
		}
		if s.w.CompareAndSwap(w, w&^lsIdleFin) {
			return true
		}
	}
}

// closeLocked ends the link; false if it had. Under link.mu.
func (s *linkState) closeLocked() bool { return s.set(lsClosed, lsClosed) }

var lsNames = [...]string{"started", "fenced", "write-shut", "idle-fin", "idle-closed", "peer-idle", "goodbye-clean", "goodbye-unclean", "closed"}

func (s *linkState) String() string {
	w := s.w.Load()
	if w == 0 {
		return "registered"
	}
	var names []string
	for i, name := range lsNames {
		if w&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return strings.Join(names, "|")
}

// peerPhase is where a peer incarnation is: up; leaving (it said goodbye
// on some link: gone when its last link ends); gone (incarnationGone:
// everything pinned to it failed, buried). It only moves forward, by to,
// under peer.mu.
type peerPhase uint8

const (
	peerUp peerPhase = iota
	peerLeaving
	peerGone
)

// to moves the phase forward to next; false if it was there or past.
func (ph *peerPhase) to(next peerPhase) bool {
	if *ph >= next {
		return false
	}
	*ph = next
	return true
}

func (ph peerPhase) String() string { return [...]string{"up", "leaving", "gone"}[ph] }
