package peers

import "fmt"

// Time is logical time, in whatever unit the driver chooses (Node: unix
// nanoseconds; the simulator: milliseconds). It only moves forward, and
// only through Tick and IdleCheck.
type Time int64

// LinkID names a link in one Table. The Table allocates the ids of the
// links it dials (Dial effects): small numbers, never reused. The driver
// names the links it accepts (Accepted), with InboundBit set so the two
// spaces never meet. A link's id on the dialer's side travels in its
// hello (Hello.DialID): that is how fences name links across nodes.
type LinkID uint64

// InboundBit is set in the id of every link the driver accepted.
const InboundBit LinkID = 1 << 63

// CallID names a pending call. The driver chooses it (CallIssued) and it
// must be unique among the calls this Table holds.
type CallID uint64

// Role is what a link carries.
type Role uint8

const (
	RoleNative Role = iota // the one native link per peer incarnation and direction
	RolePool               // a link of a proxy pool, paired with one remote worker
)

func (r Role) String() string {
	if r == RolePool {
		return "pool"
	}
	return "native"
}

// PeerState is the state of one peer incarnation.
type PeerState uint8

const (
	// PeerUp: known (from discovery or a hello) and taking traffic.
	PeerUp PeerState = iota + 1
	// PeerLeaving: it said goodbye on a link. Nothing new is routed to
	// it; it is gone when its last link ends.
	PeerLeaving
	// PeerGone: superseded by a newer incarnation, reported down by
	// discovery, or its last link ended after a goodbye. A gone peer
	// holds nothing: it leaves the table in the step that makes it gone
	// and its incarnation is buried (refused from then on).
	PeerGone
)

var peerStates = [...]string{"?", "up", "leaving", "gone"}

func (s PeerState) String() string { return peerStates[min(int(s), len(peerStates)-1)] }

// LinkState is the state of one link.
type LinkState uint8

const (
	// LinkDialing: a dial we asked for (Dial) has not completed.
	LinkDialing LinkState = iota + 1
	// LinkHello: connected; the handshake (hello, welcome) is running.
	// Only the handshake is written on it.
	LinkHello
	// LinkOpen: authenticated and registered with its peer incarnation.
	LinkOpen
	// LinkHeld: open, but its reader waits on a fence: the peer named
	// links it abandoned, whose readers here have not ended. The driver
	// reads nothing from it (Reading reports false); it is not silent.
	LinkHeld
	// LinkFenced: we abandoned it while its peer lives (a pool torn down
	// for a handover back to the native path): the other links carry a
	// fence naming it, we write nothing more and half-closed it; we read
	// it until the peer closes its side.
	LinkFenced
	// LinkIdleClosing: we closed it for idleness: the idle-close frame
	// was its last, it is fenced like LinkFenced, half-closed, read to
	// the end.
	LinkIdleClosing
	// LinkPeerIdle: its dialer closed it for idleness: we write nothing
	// more on it and read it to the end.
	LinkPeerIdle
	// LinkEnded: ended. A closed link leaves the table in the step that
	// closes it; the state is only seen in traces.
	LinkEnded
)

var linkStates = [...]string{"?", "dialing", "hello", "open", "held", "fenced", "idle-closing", "peer-idle", "closed"}

func (s LinkState) String() string { return linkStates[min(int(s), len(linkStates)-1)] }

// runtimePhase is s as a runtime link's word (LinkWord.Phase) names it:
// the runtime has no dialing link (a link exists once connected) and
// does not mark a held one (its reader waits on the fence; the link is
// open).
func (s LinkState) runtimePhase() LinkState {
	switch s {
	case LinkDialing:
		return LinkHello
	case LinkHeld:
		return LinkOpen
	}
	return s
}

// writable reports whether data and control may be written in state s.
func (s LinkState) writable() bool { return s == LinkOpen || s == LinkHeld }

// PoolState is the state of the pool toward one peer incarnation.
type PoolState uint8

const (
	PoolNone PoolState = iota
	// PoolBuilding: its links are being dialed; traffic takes the native
	// path.
	PoolBuilding
	// PoolFencing: published (traffic is routed to it) but its links
	// write no data until the native path has delivered what it carried
	// before: the pong of a ping written on the native link last.
	PoolFencing
	// PoolOpen: published and writing.
	PoolOpen
)

var poolStates = [...]string{"none", "building", "fencing", "open"}

func (s PoolState) String() string { return poolStates[min(int(s), len(poolStates)-1)] }

// CallState is where a pending call is.
type CallState uint8

const (
	// CallQueued: waiting in a link's queue (a native link not open yet,
	// a pool link behind its fence). Never written: failing it is "not
	// executed".
	CallQueued CallState = iota + 1
	// CallWritten: handed to a link (a Write effect). Failing it is "may
	// have executed"; a reply makes it "executed".
	CallWritten
)

// Class is the outcome class of an ended call (actor.Outcome).
type Class uint8

const (
	NotExecuted Class = iota + 1
	MayHaveExecuted
	Executed
)

var classes = [...]string{"?", "not-executed", "may-have-executed", "executed"}

func (c Class) String() string { return classes[min(int(c), len(classes)-1)] }

// Reason says why a link closed, a call failed or a message was dropped.
type Reason uint8

const (
	ReasonNone         Reason = iota
	ReasonDialFailed          // the dial failed
	ReasonLinkClosed          // the driver reported the link ended
	ReasonSilent              // nothing heard for the heartbeat window
	ReasonHandshake           // the handshake did not finish within the window
	ReasonRefused             // the hello was refused (buried, still connected, too many links)
	ReasonOtherInc            // a pool link reached another incarnation than its pool's
	ReasonSuperseded          // a newer incarnation of the name is up
	ReasonDown                // discovery reports the incarnation down
	ReasonGoodbye             // it said goodbye and its last link ended
	ReasonIdle                // closed for idleness
	ReasonPoolTornDown        // its pool was torn down
	ReasonFenceTimeout        // a fence waited the heartbeat window for it
	ReasonNoPeer              // no live incarnation to route to
	ReasonOverloaded          // a bound was reached
	ReasonStale               // a reply for an incarnation with no link left
	ReasonStopped             // this node stopped
	ReasonLost                // the link ended uncleanly: what the peer wrote may be lost
	ReasonCancelled           // its caller gave up (CallCancelled)
)

var reasons = [...]string{"", "dial-failed", "link-closed", "silent", "handshake", "refused", "other-incarnation",
	"superseded", "down", "goodbye", "idle", "pool-torn-down", "fence-timeout", "no-peer", "overloaded", "stale", "stopped", "lost", "cancelled"}

func (r Reason) String() string { return reasons[min(int(r), len(reasons)-1)] }

// FrameKind is what a frame is.
type FrameKind uint8

const (
	FrameHello     FrameKind = iota + 1 // the dialer's hello (Frame.Hello)
	FrameWelcome                        // the acceptor's answer (Frame.Hello)
	FrameSend                           // a send (Sender, Seq)
	FrameCall                           // a call (Sender, Seq, Call)
	FrameReply                          // a call's reply (Call, CallerInc)
	FramePing                           // a heartbeat, and a barrier (its pong)
	FramePong                           // answers the ping before it on the same link
	FrameFence                          // deliver nothing after it before the named links' readers ended (Links)
	FrameGoodbye                        // the sender leaves: no new traffic to it
	FrameIdleClose                      // the dialer closes this link for idleness
)

var frameKinds = [...]string{"?", "hello", "welcome", "send", "call", "reply", "ping", "pong", "fence", "goodbye", "idle-close"}

func (k FrameKind) String() string { return frameKinds[min(int(k), len(frameKinds)-1)] }

// Frame is one frame on a link, as the core sees it (the driver encodes
// and decodes the wire form; payloads stay with the driver).
type Frame struct {
	Kind FrameKind
	// Sender and Seq identify a send or call for per-sender order: Seq
	// grows per Sender (the driver's numbering; the core only carries it).
	Sender uint64
	Seq    uint64
	Call   CallID
	// CallerInc is, on a reply, the incarnation whose call it answers.
	CallerInc uint64
	Links     []LinkID // a fence's links: the dialer's ids
	Hello     *Hello   // hello and welcome
}

func (f Frame) String() string {
	switch f.Kind {
	case FrameSend:
		return fmt.Sprintf("send{s%d #%d}", f.Sender, f.Seq)
	case FrameCall:
		return fmt.Sprintf("call{c%d s%d #%d}", f.Call, f.Sender, f.Seq)
	case FrameReply:
		return fmt.Sprintf("reply{c%d inc %x}", f.Call, f.CallerInc)
	case FrameFence:
		return fmt.Sprintf("fence%v", f.Links)
	case FrameHello, FrameWelcome:
		if f.Hello != nil {
			return fmt.Sprintf("%s{%s %x %s dial %d}", f.Kind, f.Hello.Node, f.Hello.Inc, f.Hello.Role, f.Hello.DialID)
		}
	}
	return f.Kind.String()
}

// Hello is what each side of a handshake says about itself.
type Hello struct {
	Node     string
	Inc      uint64
	Role     Role   // the link's role (the dialer's say)
	DialID   LinkID // the dialer's id for the link
	PoolSize int    // workers in its receiver pool; 0: none
}
