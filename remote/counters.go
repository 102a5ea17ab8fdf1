package remote

import "github.com/mailroom-go/mailroom/discovery"

// CounterKind says how a value of Stats moves.
type CounterKind uint8

const (
	// KindCounter only grows, from 0 at start.
	KindCounter CounterKind = iota + 1
	// KindGauge is a level now: it goes up and down.
	KindGauge
)

func (k CounterKind) String() string {
	switch k {
	case KindCounter:
		return "counter"
	case KindGauge:
		return "gauge"
	}
	return "CounterKind(?)"
}

// Counter describes one value of Stats (Stats.Each).
type Counter struct {
	// Field is the Stats field the value is read from. An array field
	// (MemberEvents) has one Counter per element, told apart by Labels.
	Field string
	// Help says what it counts.
	Help string
	Kind CounterKind
	// Metric is the Prometheus family package metrics exports the value
	// in, "" when it exports none, and Labels the values of that family's
	// labels for it (nil for none). Labels is shared: do not modify it.
	Metric string
	Labels map[string]string
}

// Each calls f with every value of s, described, in the order of Stats'
// fields (an array field's elements in their order): what package
// metrics exports and the observer lists, and what an exporter of its own
// can read instead of naming the fields.
func (s Stats) Each(f func(c Counter, v float64)) {
	for i := range counterTable {
		r := &counterTable[i]
		f(r.Counter, r.read(&s))
	}
}

// counterRow is one row of the table: a value of Stats and how to read
// it.
type counterRow struct {
	Counter
	read func(s *Stats) float64
}

// The Prometheus families of package metrics the table's rows are
// exported in. The family's help text and label names are metrics'.
const (
	mSent         = "mailroom_remote_messages_sent_total"
	mReceived     = "mailroom_remote_messages_received_total"
	mDelivered    = "mailroom_remote_messages_delivered_total"
	mReplies      = "mailroom_remote_replies_total"
	mLate         = "mailroom_remote_late_replies_total"
	mFailedLive   = "mailroom_remote_failed_by_liveness_total"
	mBad          = "mailroom_remote_bad_input_total"
	mUnsent       = "mailroom_remote_dropped_unsent_total"
	mBytes        = "mailroom_remote_bytes_total"
	mFrames       = "mailroom_remote_frames_total"
	mHeartbeats   = "mailroom_remote_heartbeats_missed_total"
	mVerdicts     = "mailroom_remote_liveness_verdicts_total"
	mPeers        = "mailroom_remote_peers"
	mInflight     = "mailroom_remote_inflight_calls"
	mRefused      = "mailroom_remote_refused_total"
	mMembers      = "mailroom_discovery_members"
	mMemberEvents = "mailroom_discovery_events_total"
)

// labels pairs label names with values: labels("op", "send").
func labels(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// counterTable is every value of Stats, in the order of its fields. A
// new field of Stats needs its row here (TestCounterTableCoversStats
// fails without it); package metrics exports it once its Metric names a
// family metrics knows (metrics' TestStatFamilies says which), and the
// observer lists it as it is.
var counterTable = []counterRow{
	{Counter{Field: "SendsNative", Kind: KindCounter, Help: "sends and casts queued on a native link", Metric: mSent, Labels: labels("op", "send", "path", "native")},
		func(s *Stats) float64 { return float64(s.SendsNative) }},
	{Counter{Field: "SendsPooled", Kind: KindCounter, Help: "sends and casts handed to a pool", Metric: mSent, Labels: labels("op", "send", "path", "pooled")},
		func(s *Stats) float64 { return float64(s.SendsPooled) }},
	{Counter{Field: "CallsNative", Kind: KindCounter, Help: "calls and requests queued on a native link", Metric: mSent, Labels: labels("op", "call", "path", "native")},
		func(s *Stats) float64 { return float64(s.CallsNative) }},
	{Counter{Field: "CallsPooled", Kind: KindCounter, Help: "calls and requests handed to a pool", Metric: mSent, Labels: labels("op", "call", "path", "pooled")},
		func(s *Stats) float64 { return float64(s.CallsPooled) }},
	{Counter{Field: "Received", Kind: KindCounter, Help: "sends, casts, calls and requests read from links, delivered or not", Metric: mReceived},
		func(s *Stats) float64 { return float64(s.Received) }},
	{Counter{Field: "Delivered", Kind: KindCounter, Help: "received messages handed on: a send or request queued in its actor's mailbox, a cast or call started", Metric: mDelivered},
		func(s *Stats) float64 { return float64(s.Delivered) }},
	{Counter{Field: "RepliesNative", Kind: KindCounter, Help: "replies sent back to callers on a native link", Metric: mReplies, Labels: labels("path", "native")},
		func(s *Stats) float64 { return float64(s.RepliesNative) }},
	{Counter{Field: "RepliesPooled", Kind: KindCounter, Help: "replies sent back to callers through a pool", Metric: mReplies, Labels: labels("path", "pooled")},
		func(s *Stats) float64 { return float64(s.RepliesPooled) }},
	{Counter{Field: "RepliesDropped", Kind: KindCounter, Help: "replies whose caller incarnation was gone (dead letters)", Metric: mReplies, Labels: labels("path", "dropped")},
		func(s *Stats) float64 { return float64(s.RepliesDropped) }},
	{Counter{Field: "LateReplies", Kind: KindCounter, Help: "replies for calls that had already ended", Metric: mLate},
		func(s *Stats) float64 { return float64(s.LateReplies) }},
	{Counter{Field: "FailedByLiveness", Kind: KindCounter, Help: "pending calls failed because their path or peer died", Metric: mFailedLive},
		func(s *Stats) float64 { return float64(s.FailedByLiveness) }},
	{Counter{Field: "BadFrames", Kind: KindCounter, Help: "frames that closed their link (malformed, unknown kind, too large)", Metric: mBad, Labels: labels("kind", "frame")},
		func(s *Stats) float64 { return float64(s.BadFrames) }},
	{Counter{Field: "BadMessages", Kind: KindCounter, Help: "payloads that could not be encoded or decoded", Metric: mBad, Labels: labels("kind", "message")},
		func(s *Stats) float64 { return float64(s.BadMessages) }},
	{Counter{Field: "HandshakeFailures", Kind: KindCounter, Help: "handshakes that failed", Metric: mBad, Labels: labels("kind", "handshake")},
		func(s *Stats) float64 { return float64(s.HandshakeFailures) }},
	{Counter{Field: "GuardDiverted", Kind: KindCounter, Help: "replies kept out of a pool of another incarnation"},
		func(s *Stats) float64 { return float64(s.GuardDiverted) }},
	{Counter{Field: "DroppedUnsent", Kind: KindCounter, Help: "sends and casts a closing link never wrote (also dead letters)", Metric: mUnsent},
		func(s *Stats) float64 { return float64(s.DroppedUnsent) }},
	{Counter{Field: "BytesOut", Kind: KindCounter, Help: "bytes written on every link, frames and batches", Metric: mBytes, Labels: labels("direction", "out")},
		func(s *Stats) float64 { return float64(s.BytesOut) }},
	{Counter{Field: "BytesIn", Kind: KindCounter, Help: "bytes read on every link", Metric: mBytes, Labels: labels("direction", "in")},
		func(s *Stats) float64 { return float64(s.BytesIn) }},
	{Counter{Field: "FramesOut", Kind: KindCounter, Help: "frames written on every link (a pool batch is one frame)", Metric: mFrames, Labels: labels("direction", "out")},
		func(s *Stats) float64 { return float64(s.FramesOut) }},
	{Counter{Field: "FramesIn", Kind: KindCounter, Help: "frames read on every link", Metric: mFrames, Labels: labels("direction", "in")},
		func(s *Stats) float64 { return float64(s.FramesIn) }},
	{Counter{Field: "HeartbeatsMissed", Kind: KindCounter, Help: "heartbeat intervals that passed with nothing heard on a link, past the first", Metric: mHeartbeats},
		func(s *Stats) float64 { return float64(s.HeartbeatsMissed) }},
	{Counter{Field: "LinksSilent", Kind: KindCounter, Help: "links closed silent: nothing heard for HeartbeatMisses intervals", Metric: mVerdicts, Labels: labels("verdict", "link_silent")},
		func(s *Stats) float64 { return float64(s.LinksSilent) }},
	{Counter{Field: "LinksStalled", Kind: KindCounter, Help: "links closed stalled: the peer reads none of its replies", Metric: mVerdicts, Labels: labels("verdict", "link_stalled")},
		func(s *Stats) float64 { return float64(s.LinksStalled) }},
	{Counter{Field: "PeersGone", Kind: KindCounter, Help: "peer incarnations declared gone (by discovery, a restart, a goodbye)", Metric: mVerdicts, Labels: labels("verdict", "incarnation_gone")},
		func(s *Stats) float64 { return float64(s.PeersGone) }},
	{Counter{Field: "LinksIdleClosed", Kind: KindCounter, Help: "native links closed idle for LinkIdleTimeout, nothing pinned to them", Metric: mVerdicts, Labels: labels("verdict", "link_idle")},
		func(s *Stats) float64 { return float64(s.LinksIdleClosed) }},
	{Counter{Field: "MemberEvents", Kind: KindCounter, Help: "discovery events applied: up", Metric: mMemberEvents, Labels: labels("type", discovery.MemberUp.String())},
		func(s *Stats) float64 { return float64(s.MemberEvents[discovery.MemberUp-1]) }},
	{Counter{Field: "MemberEvents", Kind: KindCounter, Help: "discovery events applied: updated", Metric: mMemberEvents, Labels: labels("type", discovery.MemberUpdated.String())},
		func(s *Stats) float64 { return float64(s.MemberEvents[discovery.MemberUpdated-1]) }},
	{Counter{Field: "MemberEvents", Kind: KindCounter, Help: "discovery events applied: down", Metric: mMemberEvents, Labels: labels("type", discovery.MemberDown.String())},
		func(s *Stats) float64 { return float64(s.MemberEvents[discovery.MemberDown-1]) }},
	{Counter{Field: "Members", Kind: KindGauge, Help: "other nodes discovery lists up now", Metric: mMembers},
		func(s *Stats) float64 { return float64(s.Members) }},
	{Counter{Field: "Links", Kind: KindGauge, Help: "live links"},
		func(s *Stats) float64 { return float64(s.Links) }},
	{Counter{Field: "Peers", Kind: KindGauge, Help: "known live peer incarnations", Metric: mPeers},
		func(s *Stats) float64 { return float64(s.Peers) }},
	{Counter{Field: "Pending", Kind: KindGauge, Help: "calls and requests waiting for a reply"},
		func(s *Stats) float64 { return float64(s.Pending) }},
	{Counter{Field: "Handshaking", Kind: KindGauge, Help: "inbound handshakes in progress now (at most MaxHandshakes)"},
		func(s *Stats) float64 { return float64(s.Handshaking) }},
	{Counter{Field: "HandshakesShed", Kind: KindCounter, Help: "pre-auth connections closed by the gate: shed at MaxHandshakes or MaxHandshakesPerIP, or silent past the first-byte deadline", Metric: mRefused, Labels: labels("limit", "handshakes")},
		func(s *Stats) float64 { return float64(s.HandshakesShed) }},
	{Counter{Field: "AcceptErrors", Kind: KindCounter, Help: "failed accepts (each one backs off)"},
		func(s *Stats) float64 { return float64(s.AcceptErrors) }},
	{Counter{Field: "Inflight", Kind: KindGauge, Help: "calls and casts from peers admitted and not yet done (MaxInflightPerPeer each)", Metric: mInflight},
		func(s *Stats) float64 { return float64(s.Inflight) }},
	{Counter{Field: "CallWorkers", Kind: KindGauge, Help: "goroutines kept to run inbound calls, running one or parked"},
		func(s *Stats) float64 { return float64(s.CallWorkers) }},
	{Counter{Field: "AdmissionWaits", Kind: KindCounter, Help: "times a link's reader stopped at its peer's admission bound"},
		func(s *Stats) float64 { return float64(s.AdmissionWaits) }},
	{Counter{Field: "TooLarge", Kind: KindCounter, Help: "messages refused over MaxMessageSize (also in BadMessages)"},
		func(s *Stats) float64 { return float64(s.TooLarge) }},
	{Counter{Field: "ReadBudgetInUse", Kind: KindGauge, Help: "bytes of frame buffers held against ReadBudgetBytes"},
		func(s *Stats) float64 { return float64(s.ReadBudgetInUse) }},
	{Counter{Field: "ReadBudgetWaits", Kind: KindCounter, Help: "times a reader waited for read budget"},
		func(s *Stats) float64 { return float64(s.ReadBudgetWaits) }},
	{Counter{Field: "BudgetTimeouts", Kind: KindCounter, Help: "links closed after waiting the heartbeat window for read budget"},
		func(s *Stats) float64 { return float64(s.BudgetTimeouts) }},
	{Counter{Field: "FenceWaits", Kind: KindCounter, Help: "times a reader began waiting on a fence (a newer link of a peer held back until the older one drained)"},
		func(s *Stats) float64 { return float64(s.FenceWaits) }},
	{Counter{Field: "FenceTimeouts", Kind: KindCounter, Help: "fenced links closed because a fence waited the heartbeat window"},
		func(s *Stats) float64 { return float64(s.FenceTimeouts) }},
	{Counter{Field: "LinksRefused", Kind: KindCounter, Help: "handshakes refused by MaxLinksPerPeer or MaxNodes", Metric: mRefused, Labels: labels("limit", "links")},
		func(s *Stats) float64 { return float64(s.LinksRefused) }},
	{Counter{Field: "AnnouncesRefused", Kind: KindCounter, Help: "announcements ignored over MaxAnnounceBytes", Metric: mRefused, Labels: labels("limit", "announces")},
		func(s *Stats) float64 { return float64(s.AnnouncesRefused) }},
	{Counter{Field: "WatchesRefused", Kind: KindCounter, Help: "peer watches refused (MaxWatchesPerPeer, or not the peer's own watcher)", Metric: mRefused, Labels: labels("limit", "watches")},
		func(s *Stats) float64 { return float64(s.WatchesRefused) }},
	{Counter{Field: "NodesForgotten", Kind: KindCounter, Help: "node names forgotten after ForgetNodesAfter, or to make room (MaxNodes)"},
		func(s *Stats) float64 { return float64(s.NodesForgotten) }},
	{Counter{Field: "Nodes", Kind: KindGauge, Help: "node names known (MaxNodes)"},
		func(s *Stats) float64 { return float64(s.Nodes) }},
}
