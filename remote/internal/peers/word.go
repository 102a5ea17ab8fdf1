package peers

import "sync/atomic"

// LinkWord is the state of one of the runtime's links (Node's, not the
// Table's): one word, changed only by the transitions below. It records
// where the link is in its life (started, closing for idleness,
// half-closed, closed) and what was said on it (the peer's goodbye or
// idle close, our fence naming it), which is more than one LinkState can
// say, since those combine: a link the runtime closes for idleness may
// still hear the peer's goodbye. Phase folds it into the LinkState the
// Table uses and the simulator checks.
//
// The bits a writer and the closer must see together with the link's
// buffer (BitClosed, BitHalfClosed, BitFinIdle) are changed and read
// under the lock that guards that buffer, which the runtime holds; the
// others are changed and read without one. Every change is atomic, so
// each reader sees a whole word. The zero word is a link just accepted
// or dialed, before its reader and writer run.
type LinkWord struct{ w atomic.Uint32 }

// LinkBit is one bit of a LinkWord.
type LinkBit uint32

const (
	BitStarted    LinkBit = 1 << iota // its reader and writer run
	BitFenced                         // a fence naming it went on the peer's other links
	BitIdleClosed                     // we close it for idleness: writers take a new link
	BitPeerIdle                       // its dialer closes it for idleness: we write nothing more on it
	BitGoodbye                        // the peer said goodbye on it
	BitClean                          // ... and its goodbye was clean
	BitHalfClosed                     // we write nothing more on it: our goodbye, an idle close, a finished pool link; under the buffer's lock
	BitFinIdle                        // the writer half-closes it once its buffer is written; under the buffer's lock
	BitClosed                         // closed; under the buffer's lock
)

// Has reports whether any of bits is set.
func (s *LinkWord) Has(bits LinkBit) bool { return LinkBit(s.w.Load())&bits != 0 }

// MarkStarted: its reader and writer run.
func (s *LinkWord) MarkStarted() { s.set(BitStarted) }

// MarkFenced records that a fence naming the link is written, once: true
// for the caller that marked it.
func (s *LinkWord) MarkFenced() bool { return s.set(BitFenced)&BitFenced == 0 }

// MarkPeerIdle: its dialer said it closes it for idleness.
func (s *LinkWord) MarkPeerIdle() { s.set(BitPeerIdle) }

// MarkGoodbye: the peer said goodbye on it, cleanly or not.
func (s *LinkWord) MarkGoodbye(clean bool) {
	bits := BitGoodbye
	if clean {
		bits |= BitClean
	}
	s.set(bits)
}

// MarkIdleClosing: we close it for idleness; the writer half-closes it
// once what it holds is written. All three bits show at once: a writer
// refused for the half-close sees it was for idleness and retries on
// another link. Under the buffer's lock.
func (s *LinkWord) MarkIdleClosing() { s.set(BitIdleClosed | BitHalfClosed | BitFinIdle) }

// TakeFinIdle reports, once, that the writer is to half-close the link
// (its idle close is written). Under the buffer's lock.
func (s *LinkWord) TakeFinIdle() bool {
	return LinkBit(s.w.And(^uint32(BitFinIdle)))&BitFinIdle != 0
}

// MarkHalfClosed: we write nothing more on it. Under the buffer's lock.
func (s *LinkWord) MarkHalfClosed() { s.set(BitHalfClosed) }

// MarkClosed closes it, once: true for the caller that closed it. Under
// the buffer's lock.
func (s *LinkWord) MarkClosed() bool { return s.set(BitClosed)&BitClosed == 0 }

// Closed: closed. Under the buffer's lock.
func (s *LinkWord) Closed() bool { return s.Has(BitClosed) }

// Refuses reports whether the link takes no more frames: closed,
// half-closed, or the peer said goodbye on it. Under the buffer's lock.
func (s *LinkWord) Refuses() bool { return s.Has(BitClosed | BitHalfClosed | BitGoodbye) }

// Goodbye reports whether the peer said goodbye on it, and whether
// cleanly.
func (s *LinkWord) Goodbye() (said, clean bool) {
	w := LinkBit(s.w.Load())
	return w&BitGoodbye != 0, w&BitClean != 0
}

// Phase is the link's state as the Table names it. A link closing for
// idleness on either side is in that phase until it closes; a fenced
// link we half-closed is fenced; anything else that runs is open.
func (s *LinkWord) Phase() LinkState {
	w := LinkBit(s.w.Load())
	switch {
	case w&BitClosed != 0:
		return LinkEnded
	case w&BitStarted == 0:
		return LinkHello
	case w&BitIdleClosed != 0:
		return LinkIdleClosing
	case w&BitPeerIdle != 0:
		return LinkPeerIdle
	case w&BitFenced != 0 && w&BitHalfClosed != 0:
		return LinkFenced
	}
	return LinkOpen
}

// set sets bits and returns the word before.
func (s *LinkWord) set(bits LinkBit) LinkBit { return LinkBit(s.w.Or(uint32(bits))) }

// A peer incarnation's state only moves forward (up, leaving, gone), by
// the two transitions below, in the Table and in the runtime alike.

// Leave: the incarnation said goodbye on a link. An up one is leaving;
// any other stays as it is.
func (s *PeerState) Leave() {
	if *s == PeerUp {
		*s = PeerLeaving
	}
}

// End makes the incarnation gone, once: true for the caller that did.
func (s *PeerState) End() bool {
	if *s == PeerGone {
		return false
	}
	*s = PeerGone
	return true
}

// NameMarks say why the runtime keeps a node name in view and linked:
// listed (discovery reports it up), pinned (the user connected to it by
// address), kept (the user or a seed keeper wants it linked: never closed
// idle). Set only by the transitions below; the runtime holds its
// node's lock around them.
type NameMarks uint8

const (
	markListed NameMarks = 1 << iota
	markPinned
	markKept
)

// List: discovery reports the name up.
func (m *NameMarks) List() { *m |= markListed }

// Relist: after an incarnation's Down, the name is listed while another
// incarnation is (stillListed).
func (m *NameMarks) Relist(stillListed bool) {
	if stillListed {
		*m |= markListed
	} else {
		*m &^= markListed
	}
}

// Pin: the user connected to it by address.
func (m *NameMarks) Pin() { *m |= markPinned }

// Keep: it is to stay linked.
func (m *NameMarks) Keep() { *m |= markKept }

// Listed reports whether discovery reports it up.
func (m NameMarks) Listed() bool { return m&markListed != 0 }

// Pinned reports whether the user connected to it by address.
func (m NameMarks) Pinned() bool { return m&markPinned != 0 }

// Kept reports whether it is to stay linked.
func (m NameMarks) Kept() bool { return m&markKept != 0 }
