package bridge

import "sync/atomic"

// Stats counts what the bridge carried and refused since Start.
type Stats struct {
	Sent     uint64 // envelopes handed to mailroom for other nodes
	Received uint64 // envelopes from other nodes delivered or refused here
	Requests uint64 // requests from local futures sent to other nodes
	// FailedRequests counts requests the bridge answered with an error
	// (node loss, unreachable, unregistered type, no such process, ...).
	FailedRequests uint64
	// Dropped counts plain sends that could not be delivered (also
	// published as protoactor DeadLetterEvents).
	Dropped uint64
	// BadMessages counts payloads from other nodes this node could not
	// decode (an unregistered type, bad bytes); RemoteBadMessages those
	// from this node another node could not decode, as it reported.
	BadMessages       uint64
	RemoteBadMessages uint64
	// UnknownPeer counts envelopes from a peer incarnation that had not
	// opened a session (dropped: it is gone, or it is not a bridge).
	UnknownPeer    uint64
	WatchesRefused uint64 // watches over MaxWatchesPerPeer
	LateReplies    uint64 // replies to requests that had already ended
	// Pending: requests waiting on other nodes now (one whose future
	// timed out on its own counts until a later request sweeps it).
	Pending int
	Peers   int // peer incarnations with an open session now
}

// counters are the live counts behind Stats.
type counters struct {
	sent, received, requests, failedRequests, dropped atomic.Uint64
	badMessages, remoteBadMessages, unknownPeer       atomic.Uint64
	watchesRefused, lateReplies                       atomic.Uint64
}

// Stats returns the counters now.
func (b *Bridge) Stats() Stats {
	c := &b.stats
	return Stats{
		Sent:              c.sent.Load(),
		Received:          c.received.Load(),
		Requests:          c.requests.Load(),
		FailedRequests:    c.failedRequests.Load(),
		Dropped:           c.dropped.Load(),
		BadMessages:       c.badMessages.Load(),
		RemoteBadMessages: c.remoteBadMessages.Load(),
		UnknownPeer:       c.unknownPeer.Load(),
		WatchesRefused:    c.watchesRefused.Load(),
		LateReplies:       c.lateReplies.Load(),
		Pending:           b.pending.count(),
		Peers:             b.peers.count(),
	}
}
