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

// family is a metric family whose series are values of remote.Stats.
type family struct {
	name   string
	desc   *prometheus.Desc
	labels []string // in the order of desc's
}

func fam(name, help string, labels ...string) family {
	return family{name, desc(name, help, labels...), labels}
}

// statFamilies are the families read from remote.Stats, by name: every
// value remote.Stats.Each describes with one of these as its Metric is a
// series of it (TestStatFamilies checks the table and these agree).
var statFamilies = familyMap(
	fam("mailroom_remote_peers",
		"Live peer node incarnations this node knows."),
	fam("mailroom_remote_frames_total",
		"Frames written (out) and read (in) on every link; a pool batch is one frame.", "direction"),
	fam("mailroom_remote_bytes_total",
		"Bytes written (out) and read (in) on every link.", "direction"),
	fam("mailroom_remote_messages_sent_total",
		"Messages handed to other nodes, by operation (send: sends and casts; call: calls and requests) and path (native, pooled).", "op", "path"),
	fam("mailroom_remote_messages_received_total",
		"Sends, casts, calls and requests read from links, delivered or not."),
	fam("mailroom_remote_messages_delivered_total",
		"Received messages handed on: a send or request queued in its actor's mailbox, a cast or call started (the rest were refused or dropped, each counted where it went)."),
	fam("mailroom_remote_replies_total",
		"Replies sent back to callers on other nodes by path (native, pooled), and those dropped because the caller's incarnation was gone (dropped).", "path"),
	fam("mailroom_remote_late_replies_total",
		"Replies received for calls that had already ended."),
	fam("mailroom_remote_heartbeats_missed_total",
		"Heartbeat intervals that passed with nothing heard on a link, past the first."),
	fam("mailroom_remote_liveness_verdicts_total",
		"Liveness verdicts: links closed silent (HeartbeatMisses intervals unheard) or stalled (the peer reads none of its replies), native links closed idle (LinkIdleTimeout with no traffic and nothing pinned), and peer incarnations declared gone.", "verdict"),
	fam("mailroom_remote_failed_by_liveness_total",
		"Pending calls and requests failed because their link or peer incarnation died."),
	fam("mailroom_remote_inflight_calls",
		"Calls and casts from peers admitted and not yet done."),
	fam("mailroom_remote_bad_input_total",
		"Bad input from peers, by kind (frame: closed its link; message: could not be decoded or encoded; handshake: failed handshakes).", "kind"),
	fam("mailroom_remote_dropped_unsent_total",
		"Sends and casts a closing link never wrote (also dead letters)."),
	fam("mailroom_remote_refused_total",
		"What this node refused to hold for peers, by limit (links, handshakes, announces, watches).", "limit"),
	fam("mailroom_discovery_members",
		"Other nodes discovery lists as up now."),
	fam("mailroom_discovery_events_total",
		"Discovery events this node applied, by type (up, updated, down).", "type"),
)

func familyMap(fs ...family) map[string]family {
	m := make(map[string]family, len(fs))
	for _, f := range fs {
		m[f.name] = f
	}
	return m
}

// The remote layer's families not read from remote.Stats: per peer.
var (
	descLinks = desc("mailroom_remote_links",
		"Live links per peer node, by kind (native, pool) and state (active, fenced).", "peer", "kind", "state")
	descPeerDraining = desc("mailroom_remote_peer_draining",
		"1 when the peer node's current incarnation announced it is draining, else 0.", "peer")
	descPending = desc("mailroom_remote_pending_calls",
		"Calls and requests this node is waiting on, per peer node incarnation.", "peer", "incarnation")
	descPendingOldest = desc("mailroom_remote_pending_oldest_seconds",
		"Age of the oldest call or request this node is waiting on, per peer node incarnation.", "peer", "incarnation")
)

func describeRemote(ch chan<- *prometheus.Desc) {
	for _, f := range statFamilies {
		ch <- f.desc
	}
	for _, d := range []*prometheus.Desc{descLinks, descPeerDraining, descPending, descPendingOldest} {
		ch <- d
	}
}

// collectStats exports the values of st that have a family.
func collectStats(ch chan<- prometheus.Metric, st remote.Stats) {
	st.Each(func(c remote.Counter, v float64) {
		f, ok := statFamilies[c.Metric]
		if !ok {
			return
		}
		vals := make([]string, len(f.labels))
		for i, l := range f.labels {
			vals[i] = c.Labels[l]
		}
		t := prometheus.CounterValue
		if c.Kind == remote.KindGauge {
			t = prometheus.GaugeValue
		}
		ch <- constMetric(f.desc, t, v, vals)
	})
}

// collectRemote exports the remote layer's per-peer families and returns
// the live peer nodes, sorted.
func (c *collector) collectRemote(ch chan<- prometheus.Metric) []string {
	n := c.node
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
