package metrics

import (
	"slices"
	"strings"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/prometheus/client_golang/prometheus"
)

// maxPeers bounds the peer nodes exported per family: past it the
// remaining peers are summed under peer="_other".
const maxPeers = 512

// otherPeers is the peer label of the peers past maxPeers.
const otherPeers = "_other"

// The remote layer: links, traffic, liveness, pending calls.
var (
	descPeers = desc("mailroom_remote_peers",
		"Live peer node incarnations this node knows.")
	descLinks = desc("mailroom_remote_links",
		"Live links per peer node, by kind (native, pool) and state (active, fenced).", "peer", "kind", "state")
	descPeerDraining = desc("mailroom_remote_peer_draining",
		"1 when the peer node's current incarnation announced it is draining, else 0.", "peer")
	descFrames = desc("mailroom_remote_frames_total",
		"Frames written (out) and read (in) on every link; a pool batch is one frame.", "direction")
	descBytes = desc("mailroom_remote_bytes_total",
		"Bytes written (out) and read (in) on every link.", "direction")
	descMessages = desc("mailroom_remote_messages_sent_total",
		"Messages handed to other nodes, by operation (send: sends and casts; call: calls and requests) and path (native, pooled).", "op", "path")
	descReceived = desc("mailroom_remote_messages_received_total",
		"Sends, casts, calls and requests read from links, delivered or not.")
	descDelivered = desc("mailroom_remote_messages_delivered_total",
		"Received messages handed on: a send or request queued in its actor's mailbox, a cast or call started (the rest were refused or dropped, each counted where it went).")
	descReplies = desc("mailroom_remote_replies_total",
		"Replies sent back to callers on other nodes by path (native, pooled), and those dropped because the caller's incarnation was gone (dropped).", "path")
	descLateRemote = desc("mailroom_remote_late_replies_total",
		"Replies received for calls that had already ended.")
	descHeartbeats = desc("mailroom_remote_heartbeats_missed_total",
		"Heartbeat intervals that passed with nothing heard on a link, past the first.")
	descVerdicts = desc("mailroom_remote_liveness_verdicts_total",
		"Liveness verdicts: links closed silent (HeartbeatMisses intervals unheard) or stalled (the peer reads none of its replies), native links closed idle (LinkIdleTimeout with no traffic and nothing pinned), and peer incarnations declared gone.", "verdict")
	descFailedLiveness = desc("mailroom_remote_failed_by_liveness_total",
		"Pending calls and requests failed because their link or peer incarnation died.")
	descPending = desc("mailroom_remote_pending_calls",
		"Calls and requests this node is waiting on, per peer node incarnation.", "peer", "incarnation")
	descPendingOldest = desc("mailroom_remote_pending_oldest_seconds",
		"Age of the oldest call or request this node is waiting on, per peer node incarnation.", "peer", "incarnation")
	descInflight = desc("mailroom_remote_inflight_calls",
		"Calls and casts from peers admitted and not yet done.")
	descBad = desc("mailroom_remote_bad_input_total",
		"Bad input from peers, by kind (frame: closed its link; message: could not be decoded or encoded; handshake: failed handshakes).", "kind")
	descDroppedUnsent = desc("mailroom_remote_dropped_unsent_total",
		"Sends and casts a closing link never wrote (also dead letters).")
	descRefused = desc("mailroom_remote_refused_total",
		"What this node refused to hold for peers, by limit (links, handshakes, announces, watches).", "limit")
)

func describeRemote(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		descPeers, descLinks, descPeerDraining, descFrames, descBytes, descMessages, descReceived, descDelivered, descReplies,
		descLateRemote, descHeartbeats, descVerdicts, descFailedLiveness, descPending, descPendingOldest,
		descInflight, descBad, descDroppedUnsent, descRefused,
	} {
		ch <- d
	}
}

// collectRemote exports the remote layer and returns the live peer nodes,
// sorted.
func (c *collector) collectRemote(ch chan<- prometheus.Metric, st remote.Stats) []string {
	n := c.node
	gauge(ch, descPeers, float64(st.Peers))
	counter(ch, descFrames, st.FramesOut, "out")
	counter(ch, descFrames, st.FramesIn, "in")
	counter(ch, descBytes, st.BytesOut, "out")
	counter(ch, descBytes, st.BytesIn, "in")
	counter(ch, descMessages, st.SendsNative, "send", "native")
	counter(ch, descMessages, st.SendsPooled, "send", "pooled")
	counter(ch, descMessages, st.CallsNative, "call", "native")
	counter(ch, descMessages, st.CallsPooled, "call", "pooled")
	counter(ch, descReceived, st.Received)
	counter(ch, descDelivered, st.Delivered)
	counter(ch, descReplies, st.RepliesNative, "native")
	counter(ch, descReplies, st.RepliesPooled, "pooled")
	counter(ch, descReplies, st.RepliesDropped, "dropped")
	counter(ch, descLateRemote, st.LateReplies)
	counter(ch, descHeartbeats, st.HeartbeatsMissed)
	counter(ch, descVerdicts, st.LinksSilent, "link_silent")
	counter(ch, descVerdicts, st.LinksStalled, "link_stalled")
	counter(ch, descVerdicts, st.LinksIdleClosed, "link_idle")
	counter(ch, descVerdicts, st.PeersGone, "incarnation_gone")
	counter(ch, descFailedLiveness, st.FailedByLiveness)
	gauge(ch, descInflight, float64(st.Inflight))
	counter(ch, descBad, st.BadFrames, "frame")
	counter(ch, descBad, st.BadMessages, "message")
	counter(ch, descBad, st.HandshakeFailures, "handshake")
	counter(ch, descDroppedUnsent, st.DroppedUnsent)
	counter(ch, descRefused, st.LinksRefused, "links")
	counter(ch, descRefused, st.HandshakesShed, "handshakes")
	counter(ch, descRefused, st.AnnouncesRefused, "announces")
	counter(ch, descRefused, st.WatchesRefused, "watches")

	// Links: one series per peer, kind and state, the peers past maxPeers
	// summed.
	links := n.Links()
	slices.SortFunc(links, func(a, b remote.LinkInfo) int { return strings.Compare(a.Node, b.Node) })
	var other remote.LinkInfo
	peers := make([]string, 0, len(links))
	for i, l := range links {
		peers = append(peers, l.Node)
		if i >= maxPeers {
			other.Native, other.Pool, other.Fenced = other.Native+l.Native, other.Pool+l.Pool, other.Fenced+l.Fenced
			continue
		}
		linkSeries(ch, l.Node, l)
	}
	if len(links) > maxPeers {
		linkSeries(ch, otherPeers, other)
	}
	for i, p := range n.Peers() {
		if i >= maxPeers {
			break
		}
		d := 0.0
		if p.Draining {
			d = 1
		}
		gauge(ch, descPeerDraining, d, p.Node)
	}

	pend := n.Pending()
	slices.SortFunc(pend, func(a, b remote.PendingInfo) int { return b.Count - a.Count })
	for i, p := range pend {
		if i >= maxPeers {
			break // the most loaded first
		}
		inc := actor.FormatIncarnation(p.Incarnation)
		gauge(ch, descPending, float64(p.Count), p.Node, inc)
		gauge(ch, descPendingOldest, p.Oldest.Seconds(), p.Node, inc)
	}
	return peers
}

func linkSeries(ch chan<- prometheus.Metric, peer string, l remote.LinkInfo) {
	gauge(ch, descLinks, float64(l.Native-l.Fenced), peer, "native", "active")
	gauge(ch, descLinks, float64(l.Fenced), peer, "native", "fenced")
	gauge(ch, descLinks, float64(l.Pool), peer, "pool", "active")
}
