// Package peers is the remote layer's sans-IO core: a Table holding, per
// peer incarnation and per link, one state enum each (PeerState,
// LinkState, plus a PoolState per incarnation and a CallState per pending
// call), changed only by Step.
//
// The Table has no goroutines, no locks, no clock and does no I/O. Time
// comes in events (Tick, IdleCheck); what must happen comes out as
// effects (write a frame, close or dial a link, fail a call with its
// outcome class, deliver, dead-letter, publish or withdraw a pool route).
//
// # Model
//
// Incarnations come from discovery (DiscoveryUp) or a hello. A newer
// incarnation of a name supersedes the older, which is gone (but a
// listing does not end a linked incarnation: a crashed one stays listed
// beside its successor, and incarnations do not say which is newer; the
// successor's hello replaces it once its links have closed, or its Down
// ends it); discovery down makes one gone; one
// that said goodbye is gone when its last link ends. A gone incarnation is buried (refused from then on), every call
// pinned to it fails, its pool is withdrawn and its links close, in the
// same step.
//
// Links go dialing -> hello -> open, and end closed. An outbound link we
// stop using while its peer lives is abandoned: every other open
// outbound link to it carries a fence naming it, and every link dialed
// later starts with one. The receiving side holds a link that read a
// fence (LinkHeld: the driver reads nothing from it) until the readers
// of the named links have ended, at most the heartbeat window. A link
// silent for the window is closed. A pool torn down while its peer lives
// fences its links (LinkFenced, half-closed); an idle native link writes
// the idle-close frame and half-closes (LinkIdleClosing); its peer then
// writes nothing more on it (LinkPeerIdle).
//
// A pending call is pinned to the incarnation that took it and ends
// exactly once: failed "not executed" if it was never written to a link
// (CallQueued), "may have executed" if it was written (CallWritten) and
// its link or incarnation died first, or "executed" when its reply is
// read (Deliver of the reply). A call its caller cancels (CallCancelled)
// ends at once: not executed if it was never written (its queued frame
// is cut, never written), may have executed if it was. A link of the peer's we closed uncleanly
// may have carried replies to calls written on the others, and carries
// them until the peer learns: such calls fail "may have executed" when
// it closes, when the peer's fence naming it arrives, or, since the peer
// may have no other link to us to write one on, a window after it
// closed. A reply for an ended call is a LateReply.
//
// A pool is dialed (PoolBuilding), published once all its links are open
// behind a barrier on the native link (PoolFencing: a ping written after
// every native frame, whose pong says the peer delivered them), and
// writes once the pong arrives, or the native link closed (and was
// fenced) (PoolOpen). A reply goes into a pool only if the pool was built
// for the caller's incarnation (the incarnation guard); else on the link
// the call came on, another link of that incarnation, or it is a dead
// letter.
//
// # The runtime's words
//
// Node does not step a Table yet. Its links' state is a LinkWord, its
// peers' a PeerState and its node names' marks a NameMarks, each changed
// only by the transitions in word.go; LinkWord.Phase names a runtime
// link's state in the Table's LinkState, and the Table moves its
// PeerStates by the same two transitions. Each of the Table's links
// carries a LinkWord too, marked as the runtime marks one at each change
// of state, and Check holds its Phase to the link's state: so the
// simulator checks the runtime's fold of its word on every step.
//
// # Bounds
//
// Per name: MaxTombs buried incarnations; names: MaxNames. Per
// incarnation: MaxLinksPerPeer inbound links (outbound: one native link,
// PoolLinks pool links and finishing ones, each ending within the
// window), MaxPending calls, MaxAbandoned ids. Per link: MaxQueued frames
// queued, MaxFences links waited for. Accepted links in handshake:
// MaxHandshakes. Check verifies them.
//
// # Usage
//
// Node (the driver) is meant to own one Table under one mutex: every
// goroutine that observes something (a reader read a frame, a dial
// finished, the liveness ticker fired, discovery reported, a caller
// called) locks, calls Step, copies the effects, unlocks, and then
// carries the effects out with no runtime lock held, so no hook or
// user callback ever runs under a lock. Effects on one link must be
// carried out in the order Step returned them, and a link's reader
// reads only while Reading reports true. Mutations are test-only.
package peers
