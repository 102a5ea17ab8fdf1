package metrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/cluster"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/actorstats"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/mailroom-go/mailroom/supervisor"
	"github.com/prometheus/client_golang/prometheus"
)

// deepestRanks is how many of the deepest mailboxes are exported.
const deepestRanks = 5

// collector reads every layer of one node at scrape time.
type collector struct {
	node    *remote.Node
	pools   *proxypool.Manager // nil: no pool families
	cluster *cluster.Cluster   // nil: no cluster families
	maxAge  time.Duration
	// nodeInfo is descNodeInfo when the node's name is a constant label
	// of every family (WithNodeLabel), else descNodeInfoNamed.
	nodeInfo *prometheus.Desc
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// The node and its actor system.
var (
	descNodeInfo = desc("mailroom_node_info",
		"This node: its incarnation (16 hexadecimal digits), always 1; its name is the node label of every family (mailroom_node by default).", "incarnation")
	descNodeInfoNamed = desc("mailroom_node_info",
		"This node: its name and incarnation (16 hexadecimal digits), always 1.", DefaultNodeLabel, "incarnation")
	descActors = desc("mailroom_actors",
		"Actors alive on this node now.")
	descSpawns = desc("mailroom_actor_spawns_total",
		"Actors spawned on this node.")
	descRestarts = desc("mailroom_actor_restarts_total",
		"Children restarted by the supervisors on this node.")
	descCrashes = desc("mailroom_actor_crashes_total",
		"Actors whose Receive panicked.")
	descDeadLetters = desc("mailroom_actor_dead_letters_total",
		"Messages that will never be delivered, by reason (no_process, mailbox_full, unreachable, stopped, other).", "reason")
	descMailboxDepth = desc("mailroom_actor_mailbox_depth",
		"Mailbox depth of every actor at the last sample (user messages waiting or being handled): a snapshot, its buckets are not cumulative over time.")
	descDeepest = desc("mailroom_actor_mailbox_deepest",
		"Depth of the rank-th deepest mailbox at the last sample (rank 1..5; the observer names the actors).", "rank")
	descLateReplies = desc("mailroom_actor_late_replies_total",
		"Replies that arrived after their request or call had ended.")
	descCastFailures = desc("mailroom_actor_cast_failures_total",
		"Casts run here whose function returned an error or panicked.")
	descCallFailures = desc("mailroom_call_failures_total",
		"Calls and requests made on this node that failed, by outcome (actor.Execution.Label: not_executed, may_have_executed, executed).", "outcome")
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.nodeInfo, descActors, descSpawns, descRestarts, descCrashes, descDeadLetters, descMailboxDepth,
		descDeepest, descLateReplies, descCastFailures, descCallFailures,
	} {
		ch <- d
	}
	describeRemote(ch)
	if c.pools != nil {
		describePools(ch)
	}
	if c.cluster != nil {
		describeCluster(ch)
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	sys := c.node.System()
	c.collectActors(ch, sys)
	collectStats(ch, c.node.Stats()) // remote.Stats, discovery's counters included
	peers := c.collectRemote(ch)
	if c.pools != nil {
		collectPools(ch, c.pools, peers)
	}
	if c.cluster != nil {
		collectCluster(ch, c.cluster)
	}
}

func (c *collector) collectActors(ch chan<- prometheus.Metric, sys *actor.System) {
	if c.nodeInfo == descNodeInfoNamed {
		gauge(ch, c.nodeInfo, 1, sys.Name(), actor.FormatIncarnation(sys.Incarnation()))
	} else {
		gauge(ch, c.nodeInfo, 1, actor.FormatIncarnation(sys.Incarnation()))
	}
	gauge(ch, descActors, float64(sys.NumActors()))
	lc := actorhooks.Counters(sys)
	counter(ch, descSpawns, lc.Spawns)
	counter(ch, descRestarts, supervisor.Restarts(sys))
	counter(ch, descCrashes, lc.Crashes)
	for i, n := range lc.DeadLetters {
		counter(ch, descDeadLetters, n, actorstats.DeadReasonNames[i])
	}
	counter(ch, descLateReplies, sys.LateReplies())
	counter(ch, descCastFailures, sys.CastFailures())
	f := actorhooks.FailedOutcomes(sys)
	for _, o := range []actor.Execution{actor.NotExecuted, actor.MayHaveExecuted, actor.Executed} {
		counter(ch, descCallFailures, f[o], o.Label())
	}

	smp := actorhooks.SampleMailboxes(sys, deepestRanks, c.maxAge)
	ch <- prometheus.MustNewConstHistogram(descMailboxDepth, uint64(smp.Actors), float64(smp.Queued), depthBuckets(smp.Hist))
	for r := range deepestRanks {
		d := 0
		if r < len(smp.Deepest) {
			d = smp.Deepest[r].Depth
		}
		gauge(ch, descDeepest, float64(d), strconv.Itoa(r+1))
	}
}

// depthBuckets turns a sample's histogram (bucket 0: empty; bucket i:
// depths in [2^(i-1), 2^i); the last: everything above) into cumulative
// Prometheus buckets: upper bounds 0, 1, 3, 7, ... 2^(HistBuckets-2)-1,
// the last bucket going to +Inf.
func depthBuckets(h [actorstats.HistBuckets]int) map[float64]uint64 {
	out := make(map[float64]uint64, len(h)-1)
	var cum uint64
	for i := 0; i < len(h)-1; i++ {
		cum += uint64(h[i])
		out[float64(uint64(1)<<i-1)] = cum
	}
	return out
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- constMetric(d, prometheus.GaugeValue, v, labels)
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, labels ...string) {
	ch <- constMetric(d, prometheus.CounterValue, float64(v), labels)
}

// constMetric is one series. A label that is not valid UTF-8 (a peer
// name discovery reported: the remote layer refuses such names at the
// handshake) would fail the whole scrape: its invalid bytes become
// U+FFFD instead.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels []string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err == nil {
		return m
	}
	fixed := make([]string, len(labels))
	for i, l := range labels {
		fixed[i] = validLabel(l)
	}
	return prometheus.MustNewConstMetric(d, t, v, fixed...)
}

// validLabel is l with any bytes that are not valid UTF-8 as U+FFFD.
func validLabel(l string) string { return strings.ToValidUTF8(l, "\uFFFD") }
