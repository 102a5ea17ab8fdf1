package remote

import "fmt"

// Limits bound what other nodes can make this node run, allocate or keep
// (Config.Limits): before they prove the cookie (frames, handshakes) and
// after (a buggy or compromised node that holds it). Zero fields take
// the defaults documented on each (DefaultLimits); docs/SECURITY.md says
// what each one stops and what happens at the bound. The mechanisms live
// in handshakegate.go (handshakes), admission.go (calls and casts in
// flight), readbudget.go (frame buffers), prune.go (announcements,
// watches, node names) and supersede.go (fences).
type Limits struct {
	// MaxFrameSize bounds one frame (a message, or a batch) in bytes; a
	// peer announcing more has its link closed before anything is
	// allocated. Default 64 MiB.
	MaxFrameSize int

	// Handshake limits. Until a peer has proved the cookie it costs this
	// node a goroutine, a socket and a few KiB, and anyone who can reach
	// the listener can make it pay: these bound how many such handshakes
	// run at once. At either bound the newcomer is admitted and the
	// slowest handshake not yet proved (of its address at the per-address
	// bound; of the addresses holding the most at the node-wide one) is
	// closed in its place, without a word, and counted
	// (Stats.HandshakesShed); so is a connection that sent nothing within
	// the first-byte deadline (Config.HandshakeTimeout). Accept errors
	// (such as running out of file descriptors) back off from 5 ms,
	// doubling up to 1 s, reset by the next accepted connection, and are
	// logged at most once a second with the count of those suppressed.

	// MaxHandshakes bounds the handshakes in progress on this node.
	// Default 256.
	MaxHandshakes int
	// MaxHandshakesPerIP bounds the handshakes in progress from one
	// remote IP address, an IPv6 one by its /64 (nodes behind one
	// address, one host or a NAT, share it). Default 32.
	MaxHandshakesPerIP int

	// Limits on what an authenticated peer (a buggy or compromised node
	// that holds the cookie) can make this node run, allocate or keep.

	// MaxInflightPerPeer bounds the calls and casts of one peer
	// incarnation running here at once, over all its links (native and
	// pool). At the bound the readers of its links stop reading until
	// some end, so TCP pushes back on the peer; nothing is spawned or
	// queued beyond it. Default 4096.
	MaxInflightPerPeer int
	// MaxInflightBytesPerPeer bounds what the payloads of those calls and
	// casts decode into: an estimate from each type's schema, about the
	// payload's size for most types, more for payloads of many small
	// messages (docs/SECURITY.md, "Decoded size"). Default 64 MiB (at
	// least MaxMessageSize).
	MaxInflightBytesPerPeer int
	// MaxMessageSize bounds one message's payload (a send, cast, call,
	// request or reply), checked before it is decoded: a send or cast
	// over it is a counted dead letter, a call or request gets the error
	// reply bad_message, and the link stays up. So is a payload that
	// would decode into more than 16 times its size (beyond its message's
	// own struct), whatever its size. This node refuses to send
	// one too (actor.ErrBadMessage). Default 4 MiB, or MaxFrameSize if
	// that is smaller.
	MaxMessageSize int
	// ReadBudgetBytes bounds the bytes of frame buffers beyond 64 KiB per
	// link being read on every link of this node at once. Buffers grow
	// as bytes arrive; a reader that finds the budget spent waits for it
	// (TCP pushes back) at most the heartbeat window (Liveness.HeartbeatInterval x
	// Liveness.HeartbeatMisses), then
	// its link closes. Default 4 x MaxFrameSize (256 MiB); at least
	// MaxFrameSize.
	ReadBudgetBytes int
	// MaxLinksPerPeer bounds the links one peer incarnation has dialed to
	// this node at once; more are refused in the handshake. Default
	// 2 x (Config.PoolSize + 1) + 16.
	MaxLinksPerPeer int
	// MaxAnnounceBytes bounds one announcement (its encoded size) from a
	// peer; a larger one is ignored, logged and counted. Default 64 KiB.
	MaxAnnounceBytes int
	// MaxWatchesPerPeer bounds the watches one peer incarnation holds on
	// this node's actors; beyond it a watch is answered at once with a
	// termination whose reason is actor.ErrOverloaded. Default 65536.
	MaxWatchesPerPeer int
	// MaxNodes bounds the node names this node keeps, and a quarter of it
	// the names learned from the hellos of one source address (as for
	// MaxHandshakesPerIP). At either bound the names nothing keeps (no
	// live link, not listed by discovery, not connected to), the longest
	// unseen first, are forgotten to make room: at the quota the source's
	// own, at MaxNodes those of the source holding the most. A hello from
	// a new name is refused (too_many_nodes) only when none can be. Names
	// that discovery reports are always kept. Default 16384.
	MaxNodes int
}

// DefaultLimits returns the limits' defaults. MaxLinksPerPeer is left 0:
// its default depends on Config.PoolSize, and Start fills it.
func DefaultLimits() Limits {
	return Limits{
		MaxFrameSize:            64 << 20,
		MaxHandshakes:           256,
		MaxHandshakesPerIP:      32,
		MaxInflightPerPeer:      4096,
		MaxInflightBytesPerPeer: 64 << 20,
		MaxMessageSize:          4 << 20,
		ReadBudgetBytes:         4 * (64 << 20),
		MaxAnnounceBytes:        64 << 10,
		MaxWatchesPerPeer:       65536,
		MaxNodes:                16384,
	}
}

// withDefaults fills the zero limits; poolWorkers is the receiver pool
// size advertised (Config.poolWorkers), which MaxLinksPerPeer's default
// follows. MaxMessageSize, MaxInflightBytesPerPeer and ReadBudgetBytes
// default from MaxFrameSize as it is after its own default.
func (l Limits) withDefaults(poolWorkers int) Limits {
	d := DefaultLimits()
	if l.MaxFrameSize == 0 {
		l.MaxFrameSize = d.MaxFrameSize
	}
	if l.MaxHandshakes == 0 {
		l.MaxHandshakes = d.MaxHandshakes
	}
	if l.MaxHandshakesPerIP == 0 {
		l.MaxHandshakesPerIP = d.MaxHandshakesPerIP
	}
	if l.MaxInflightPerPeer == 0 {
		l.MaxInflightPerPeer = d.MaxInflightPerPeer
	}
	if l.MaxMessageSize == 0 {
		l.MaxMessageSize = min(d.MaxMessageSize, l.MaxFrameSize)
	}
	if l.MaxInflightBytesPerPeer == 0 {
		l.MaxInflightBytesPerPeer = max(d.MaxInflightBytesPerPeer, l.MaxMessageSize)
	}
	if l.ReadBudgetBytes == 0 {
		l.ReadBudgetBytes = 4 * l.MaxFrameSize
	}
	if l.MaxLinksPerPeer == 0 {
		l.MaxLinksPerPeer = 2*(poolWorkers+1) + 16
	}
	if l.MaxAnnounceBytes == 0 {
		l.MaxAnnounceBytes = d.MaxAnnounceBytes
	}
	if l.MaxWatchesPerPeer == 0 {
		l.MaxWatchesPerPeer = d.MaxWatchesPerPeer
	}
	if l.MaxNodes == 0 {
		l.MaxNodes = d.MaxNodes
	}
	return l
}

// validate checks l after withDefaults.
func (l Limits) validate() error {
	switch {
	case l.MaxFrameSize < 1<<10 || l.MaxFrameSize > 1<<30:
		return fmt.Errorf("remote: config: Limits.MaxFrameSize is %d, want 1 KiB to 1 GiB", l.MaxFrameSize)
	case l.MaxHandshakes < 0:
		return fmt.Errorf("remote: config: Limits.MaxHandshakes %d: want 0 (default) or more", l.MaxHandshakes)
	case l.MaxHandshakesPerIP < 0:
		return fmt.Errorf("remote: config: Limits.MaxHandshakesPerIP %d: want 0 (default) or more", l.MaxHandshakesPerIP)
	case l.MaxInflightPerPeer < 1:
		return fmt.Errorf("remote: config: Limits.MaxInflightPerPeer is %d, want 1 or more", l.MaxInflightPerPeer)
	case l.MaxMessageSize < 1<<10 || l.MaxMessageSize > l.MaxFrameSize:
		return fmt.Errorf("remote: config: Limits.MaxMessageSize is %d, want 1 KiB up to MaxFrameSize (%d)", l.MaxMessageSize, l.MaxFrameSize)
	case l.MaxInflightBytesPerPeer < l.MaxMessageSize:
		return fmt.Errorf("remote: config: Limits.MaxInflightBytesPerPeer is %d, want at least MaxMessageSize (%d)", l.MaxInflightBytesPerPeer, l.MaxMessageSize)
	case l.ReadBudgetBytes < l.MaxFrameSize:
		return fmt.Errorf("remote: config: Limits.ReadBudgetBytes is %d, want at least MaxFrameSize (%d)", l.ReadBudgetBytes, l.MaxFrameSize)
	case l.MaxLinksPerPeer < 2:
		return fmt.Errorf("remote: config: Limits.MaxLinksPerPeer is %d, want 2 or more", l.MaxLinksPerPeer)
	case l.MaxAnnounceBytes < 1<<10:
		return fmt.Errorf("remote: config: Limits.MaxAnnounceBytes is %d, want 1 KiB or more", l.MaxAnnounceBytes)
	case l.MaxWatchesPerPeer < 1:
		return fmt.Errorf("remote: config: Limits.MaxWatchesPerPeer is %d, want 1 or more", l.MaxWatchesPerPeer)
	case l.MaxNodes < 1:
		return fmt.Errorf("remote: config: Limits.MaxNodes is %d, want 1 or more", l.MaxNodes)
	}
	return nil
}
