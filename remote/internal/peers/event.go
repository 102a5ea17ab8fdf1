package peers

import "fmt"

// Event is an input to Step: something the driver observed or wants.
type Event interface{ isEvent() }

// Tick advances logical time to Now: heartbeats are written, silent
// links closed, handshakes and fences that waited the heartbeat window
// given up.
type Tick struct{ Now Time }

// IdleCheck advances logical time to Now and closes native links idle
// for Config.IdleTimeout.
type IdleCheck struct{ Now Time }

// DiscoveryUp: discovery lists incarnation Inc of Node. A newer
// incarnation of a known name supersedes the older (which is gone).
type DiscoveryUp struct {
	Node     string
	Inc      uint64
	PoolSize int
}

// DiscoveryDown: discovery reports incarnation Inc of Node down: it is
// gone.
type DiscoveryDown struct {
	Node string
	Inc  uint64
}

// DialDone: the dial of Link (a Dial effect) connected, or Failed.
type DialDone struct {
	Link   LinkID
	Failed bool
}

// Accepted: the driver accepted a connection and named it Link (with
// InboundBit set). Its hello is read next.
type Accepted struct{ Link LinkID }

// HelloRead: the handshake frame of Link was read: a hello on a link we
// accepted, a welcome on one we dialed.
type HelloRead struct {
	Link  LinkID
	Hello Hello
}

// FrameRead: a frame was read from Link. The driver reads only links for
// which Reading reports true. A pong is how a fence (a pool's publish
// barrier) is acknowledged.
type FrameRead struct {
	Link  LinkID
	Frame Frame
}

// LinkClosed: Link ended. Lost: not at a clean end of stream (reset, a
// read or write failed): frames the peer wrote on it may be lost.
type LinkClosed struct {
	Link LinkID
	Lost bool
}

// Send: a local sender sends to incarnation Inc of Node.
type Send struct {
	Sender, Seq uint64
	Node        string
	Inc         uint64
}

// CallIssued: a local caller calls incarnation Inc of Node. It ends
// exactly once: a FailCall effect, or a Deliver of its reply.
type CallIssued struct {
	Call        CallID
	Sender, Seq uint64
	Node        string
	Inc         uint64
}

// CallCancelled: the caller of a pending call to incarnation Inc of
// Node gave up (its ctx ended). A call not yet written never will be
// (the runtime cuts it out of the batch it waits in, at the write): it
// ends not executed. One written ends may have executed; the cancel the
// runtime then sends behind it changes nothing here (the simulated
// callee runs a call as it reads it) and is not modelled.
type CallCancelled struct {
	Call CallID
	Node string
	Inc  uint64
}

// ReplySend: a call taken from Link (by its caller, incarnation Inc of
// Node) has its reply.
type ReplySend struct {
	Call CallID
	Node string
	Inc  uint64
	Link LinkID
}

// BuildPool: traffic to Node warrants a pool: dial one toward its
// current incarnation (if it runs a receiver pool and has none).
type BuildPool struct{ Node string }

// TeardownPool: the pool toward Node is idle: traffic falls back to the
// native path, behind a fence.
type TeardownPool struct{ Node string }

// Stop: this node leaves: goodbye on every link, every link closed,
// every pending call failed. The Table takes no traffic after it.
type Stop struct{}

func (Tick) isEvent()          {}
func (IdleCheck) isEvent()     {}
func (DiscoveryUp) isEvent()   {}
func (DiscoveryDown) isEvent() {}
func (DialDone) isEvent()      {}
func (Accepted) isEvent()      {}
func (HelloRead) isEvent()     {}
func (FrameRead) isEvent()     {}
func (LinkClosed) isEvent()    {}
func (Send) isEvent()          {}
func (CallIssued) isEvent()    {}
func (CallCancelled) isEvent() {}
func (ReplySend) isEvent()     {}
func (BuildPool) isEvent()     {}
func (TeardownPool) isEvent()  {}
func (Stop) isEvent()          {}

// EffectKind is what the driver must do.
type EffectKind uint8

const (
	// Write Frame on Link (in order: effects on one link are written in
	// the order Step returned them).
	EffWrite EffectKind = iota + 1
	// Close Link: Half half-closes it once what was written is written
	// (FIN) and keeps reading until the peer closes (a LinkClosed
	// follows); otherwise it is closed both ways and the Table has
	// already forgotten it (no LinkClosed needed).
	EffClose
	// Dial Node for a link named Link with Role, meant for incarnation
	// Inc; report DialDone.
	EffDial
	// FailCall: Call ended with Class, for Reason.
	EffFailCall
	// Deliver Frame (a send, a call to run, or a reply: its call ended
	// executed) read from Link.
	EffDeliver
	// DeadLetter: Frame (a send or a reply) could not be routed: count it.
	EffDeadLetter
	// LateReply: a reply for Call, which had ended: count it.
	EffLateReply
	// PublishRoute: traffic to incarnation Inc of Node goes through its
	// pool (Links) from now on.
	EffPublishRoute
	// WithdrawRoute: the pool toward incarnation Inc of Node is gone;
	// traffic takes the native path.
	EffWithdrawRoute
	// PeerGone: incarnation Inc of Node is gone (run the hooks, cancel
	// what runs here for it).
	EffPeerGone
)

var effectKinds = [...]string{"?", "write", "close", "dial", "fail-call", "deliver", "dead-letter", "late-reply", "publish", "withdraw", "peer-gone"}

func (k EffectKind) String() string { return effectKinds[min(int(k), len(effectKinds)-1)] }

// Effect is one thing the driver does after Step, with no lock held.
// Only the fields its Kind names are set.
type Effect struct {
	Kind   EffectKind
	Link   LinkID
	Frame  Frame
	Half   bool
	Node   string
	Inc    uint64
	Role   Role
	Call   CallID
	Class  Class
	Reason Reason
	Links  []LinkID
}

func (e Effect) String() string {
	switch e.Kind {
	case EffWrite:
		return fmt.Sprintf("write L%d %s", e.Link, e.Frame)
	case EffClose:
		if e.Half {
			return fmt.Sprintf("close L%d half (%s)", e.Link, e.Reason)
		}
		return fmt.Sprintf("close L%d (%s)", e.Link, e.Reason)
	case EffDial:
		return fmt.Sprintf("dial L%d %s %s inc %x", e.Link, e.Node, e.Role, e.Inc)
	case EffFailCall:
		return fmt.Sprintf("fail c%d %s (%s)", e.Call, e.Class, e.Reason)
	case EffDeliver:
		return fmt.Sprintf("deliver L%d %s", e.Link, e.Frame)
	case EffDeadLetter:
		return fmt.Sprintf("dead-letter %s (%s)", e.Frame, e.Reason)
	case EffLateReply:
		return fmt.Sprintf("late-reply c%d", e.Call)
	case EffPublishRoute:
		return fmt.Sprintf("publish %s inc %x %v", e.Node, e.Inc, e.Links)
	case EffWithdrawRoute:
		return fmt.Sprintf("withdraw %s inc %x (%s)", e.Node, e.Inc, e.Reason)
	case EffPeerGone:
		return fmt.Sprintf("peer-gone %s inc %x (%s)", e.Node, e.Inc, e.Reason)
	}
	return e.Kind.String()
}
