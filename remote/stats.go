package remote

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/mailroom-go/mailroom/remote/internal/peers"
)

// Stats are the remote layer's counters since start, and its levels now.
// Each gives every value with its description (counters.go holds the
// table); a field added here needs its row there.
type Stats struct {
	SendsNative uint64 // sends and casts queued on a native link
	SendsPooled uint64 // sends and casts handed to a pool
	CallsNative uint64 // calls and requests queued on a native link
	CallsPooled uint64 // calls and requests handed to a pool
	// Received counts the sends, casts, calls and requests read from
	// links, whether or not they could be delivered; Delivered those of
	// them handed on: a send or request queued in its actor's mailbox, a
	// cast or call started. The rest were refused or dropped, each counted
	// where it went (a refusal to the caller, a dead letter, BadMessages).
	Received          uint64
	Delivered         uint64
	RepliesNative     uint64
	RepliesPooled     uint64
	RepliesDropped    uint64 // replies whose caller incarnation was gone (dead letters)
	LateReplies       uint64 // replies for calls that had already ended
	FailedByLiveness  uint64 // pending calls failed because their path or peer died
	BadFrames         uint64 // frames that closed their link (malformed, unknown kind, too large)
	BadMessages       uint64 // payloads that could not be encoded or decoded
	HandshakeFailures uint64
	GuardDiverted     uint64 // replies kept out of a pool of another incarnation
	DroppedUnsent     uint64 // sends and casts a closing link never wrote (also dead letters)
	BytesOut          uint64 // bytes written on every link, frames and batches
	BytesIn           uint64 // bytes read on every link
	FramesOut         uint64 // frames written on every link (a pool batch is one frame)
	FramesIn          uint64 // frames read on every link
	// Liveness: heartbeat intervals that passed with nothing
	// heard on a link (past the first, a grace for the ping's round trip
	// and the check's granularity), links closed for it (silent: HeartbeatMisses
	// intervals; stalled: a peer that reads none of its replies), and peer
	// incarnations declared gone (by discovery, a restart, a goodbye).
	HeartbeatsMissed uint64
	LinksSilent      uint64
	LinksStalled     uint64
	PeersGone        uint64
	// LinksIdleClosed counts the native links this node closed because
	// they were idle for LinkIdleTimeout: not a liveness
	// failure, nothing pinned to them failed.
	LinksIdleClosed uint64
	// Discovery: the events the node applied, by type (Up, Updated,
	// Down), and the other nodes discovery lists up now.
	MemberEvents [3]uint64
	Members      int
	Links        int // live links
	Peers        int // known live peer incarnations
	Pending      int // calls and requests waiting for a reply

	// Handshakes and the accept loop.
	Handshaking    int    // inbound handshakes in progress now (at most MaxHandshakes)
	HandshakesShed uint64 // pre-auth connections closed by the gate: shed at MaxHandshakes or MaxHandshakesPerIP, or silent past the first-byte deadline
	AcceptErrors   uint64 // failed accepts (each one backs off)

	// The limits on what peers can make this node hold (docs/SECURITY.md).
	Inflight         int64  // calls and casts from peers admitted and not yet done (MaxInflightPerPeer each)
	CallWorkers      int64  // goroutines kept to run inbound calls, running one or parked
	AdmissionWaits   uint64 // times a link's reader stopped at its peer's admission bound
	TooLarge         uint64 // messages refused over MaxMessageSize (also in BadMessages)
	ReadBudgetInUse  int64  // bytes of frame buffers held against ReadBudgetBytes
	ReadBudgetWaits  uint64 // times a reader waited for read budget
	BudgetTimeouts   uint64 // links closed after waiting the heartbeat window for read budget
	FenceWaits       uint64 // times a reader began waiting on a fence (a newer link of a peer held back until the older one drained)
	FenceTimeouts    uint64 // fenced links closed because a fence waited the heartbeat window
	LinksRefused     uint64 // handshakes refused by MaxLinksPerPeer or MaxNodes
	AnnouncesRefused uint64 // announcements ignored over MaxAnnounceBytes
	WatchesRefused   uint64 // peer watches refused (MaxWatchesPerPeer, or not the peer's own watcher)
	NodesForgotten   uint64 // node names forgotten after ForgetNodesAfter, or to make room (MaxNodes)
	Nodes            int    // node names known (MaxNodes)
}

type nodeStats struct {
	sendsNative, sendsPooled                     atomic.Uint64
	callsNative, callsPooled                     atomic.Uint64
	received, delivered                          atomic.Uint64
	repliesNative, repliesPooled, repliesDropped atomic.Uint64
	lateReplies, failedByLiveness                atomic.Uint64
	badFrames, badMessages, handshakeFailures    atomic.Uint64
	guardDiverted                                atomic.Uint64
	bytesOut, bytesIn, framesOut, framesIn       atomic.Uint64 // adjacent: a frame touches one or two cache lines
	droppedUnsent                                atomic.Uint64
	handshakesShed, acceptErrors                 atomic.Uint64

	admissionWaits, tooLarge, readWaits, budgetTimeouts atomic.Uint64
	fenceWaits, fenceTimeouts, linksRefused             atomic.Uint64
	announcesRefused                                    atomic.Uint64
	watchesRefused, nodesForgotten                      atomic.Uint64

	heartbeatsMissed, linksSilent, linksStalled, peersGone atomic.Uint64
	linksIdleClosed                                        atomic.Uint64
	memberEvents                                           [3]atomic.Uint64 // by discovery.EventType-1
}

// Stats returns a snapshot of the counters.
func (n *Node) Stats() Stats {
	s := Stats{
		SendsNative:       n.stats.sendsNative.Load(),
		SendsPooled:       n.stats.sendsPooled.Load(),
		CallsNative:       n.stats.callsNative.Load(),
		CallsPooled:       n.stats.callsPooled.Load(),
		Received:          n.stats.received.Load(),
		Delivered:         n.stats.delivered.Load(),
		RepliesNative:     n.stats.repliesNative.Load(),
		RepliesPooled:     n.stats.repliesPooled.Load(),
		RepliesDropped:    n.stats.repliesDropped.Load(),
		LateReplies:       n.stats.lateReplies.Load(),
		FailedByLiveness:  n.stats.failedByLiveness.Load(),
		BadFrames:         n.stats.badFrames.Load(),
		BadMessages:       n.stats.badMessages.Load(),
		HandshakeFailures: n.stats.handshakeFailures.Load(),
		GuardDiverted:     n.stats.guardDiverted.Load(),
		DroppedUnsent:     n.stats.droppedUnsent.Load(),
		BytesOut:          n.stats.bytesOut.Load(),
		BytesIn:           n.stats.bytesIn.Load(),
		FramesOut:         n.stats.framesOut.Load(),
		FramesIn:          n.stats.framesIn.Load(),
		HeartbeatsMissed:  n.stats.heartbeatsMissed.Load(),
		LinksSilent:       n.stats.linksSilent.Load(),
		LinksStalled:      n.stats.linksStalled.Load(),
		PeersGone:         n.stats.peersGone.Load(),
		LinksIdleClosed:   n.stats.linksIdleClosed.Load(),
		Handshaking:       n.acc.gate.inProgress(),
		HandshakesShed:    n.stats.handshakesShed.Load(),
		AcceptErrors:      n.stats.acceptErrors.Load(),

		AdmissionWaits:   n.stats.admissionWaits.Load(),
		TooLarge:         n.stats.tooLarge.Load(),
		ReadBudgetInUse:  n.readBudget.inUse(),
		ReadBudgetWaits:  n.stats.readWaits.Load(),
		BudgetTimeouts:   n.stats.budgetTimeouts.Load(),
		FenceWaits:       n.stats.fenceWaits.Load(),
		FenceTimeouts:    n.stats.fenceTimeouts.Load(),
		LinksRefused:     n.stats.linksRefused.Load(),
		AnnouncesRefused: n.stats.announcesRefused.Load(),
		WatchesRefused:   n.stats.watchesRefused.Load(),
		NodesForgotten:   n.stats.nodesForgotten.Load(),
		CallWorkers:      n.workers.count(),
	}
	for _, p := range n.livePeers() {
		s.Peers++
		s.Inflight += p.adm.inflight()
		p.mu.Lock()
		s.Links += len(p.links)
		s.Pending += len(p.pending)
		p.mu.Unlock()
	}
	for i := range s.MemberEvents {
		s.MemberEvents[i] = n.stats.memberEvents[i].Load()
	}
	n.mu.Lock()
	s.Nodes = len(n.slots)
	for _, sl := range n.slots {
		if sl.marks.Listed() {
			s.Members++
		}
	}
	n.mu.Unlock()
	return s
}

// livePeers are the current incarnations not yet gone.
func (n *Node) livePeers() []*peer {
	n.mu.Lock()
	cur := make([]*peer, 0, len(n.slots))
	for _, s := range n.slots {
		if s.cur != nil {
			cur = append(cur, s.cur)
		}
	}
	n.mu.Unlock()
	out := cur[:0]
	for _, p := range cur {
		if !p.isGone() {
			out = append(out, p)
		}
	}
	return out
}

// PendingInfo describes the calls and requests waiting on one peer
// incarnation.
type PendingInfo struct {
	Node        string
	Incarnation uint64
	Count       int
	Oldest      time.Duration // age of the oldest one
}

// Pending reports, per live peer incarnation, the calls and requests this
// node is waiting on. A count that climbs on a healthy node is a wedged
// callee: liveness cannot see it, a deadline can.
func (n *Node) Pending() []PendingInfo {
	now := time.Now().UnixNano()
	var out []PendingInfo
	for _, p := range n.livePeers() {
		p.mu.Lock()
		pi := PendingInfo{Node: p.name, Incarnation: p.inc, Count: len(p.pending)}
		var oldest int64
		for _, pc := range p.pending {
			if oldest == 0 || pc.start < oldest {
				oldest = pc.start
			}
		}
		p.mu.Unlock()
		if oldest != 0 {
			pi.Oldest = time.Duration(now - oldest)
		}
		out = append(out, pi)
	}
	return out
}

// Running reports the calls from other nodes executing here now, by
// function name.
func (n *Node) Running() map[string]int64 { return n.runningByFn.nonZero() }

// fnCounts counts, by function name, the inbound calls executing. The
// names are the ones this node registered (a call to another is refused
// before it is counted), so the map is bounded by them.
type fnCounts struct{ m sync.Map } // function name -> *atomic.Int64

// counter is fn's counter, made on first use.
func (c *fnCounts) counter(fn string) *atomic.Int64 {
	if v, ok := c.m.Load(fn); ok {
		return v.(*atomic.Int64)
	}
	v, _ := c.m.LoadOrStore(fn, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// nonZero is the counts now, leaving out the functions none runs.
func (c *fnCounts) nonZero() map[string]int64 {
	out := map[string]int64{}
	c.m.Range(func(k, v any) bool {
		if c := v.(*atomic.Int64).Load(); c != 0 {
			out[k.(string)] = c
		}
		return true
	})
	return out
}

// LinkInfo counts the live links to one peer incarnation, by kind and
// state.
type LinkInfo struct {
	Node        string
	Incarnation uint64
	Native      int // native links, fenced ones included
	Pool        int // a proxy pool's links (one per worker)
	Fenced      int // native links fenced for a handover, not yet closed
}

// Links reports, per live peer incarnation, its links. For the read side
// (metrics, observer): one lock of each peer per call, nothing per message.
func (n *Node) Links() []LinkInfo {
	var out []LinkInfo
	for _, p := range n.livePeers() {
		li := LinkInfo{Node: p.name, Incarnation: p.inc}
		p.mu.Lock()
		for l := range p.links {
			switch {
			case l.role == wire.RolePool:
				li.Pool++
			case l.st.Has(peers.BitFenced):
				li.Native++
				li.Fenced++
			default:
				li.Native++
			}
		}
		p.mu.Unlock()
		out = append(out, li)
	}
	return out
}
