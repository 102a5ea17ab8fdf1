package metrics

import (
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/prometheus/client_golang/prometheus"
)

// The proxy pools, per peer node (WithPools).
var (
	descPoolProxies = desc("mailroom_pool_proxies",
		"Proxies of the pool toward the peer node (0 when it has none).", "peer")
	descPoolBatch = desc("mailroom_pool_batch_size",
		"Messages per batch the pool wrote toward the peer node.", "peer")
	descPoolBytes = desc("mailroom_pool_sent_bytes_total",
		"Bytes of the batches the pool wrote toward the peer node.", "peer")
	descPoolQueue = desc("mailroom_pool_queue_depth",
		"Messages waiting in the pool's proxies toward the peer node.", "peer")
	descPoolQueueBytes = desc("mailroom_pool_queue_bytes",
		"Encoded bytes of the messages waiting in the pool's proxies toward the peer node.", "peer")
	descPoolReplies = desc("mailroom_pool_replies_total",
		"Replies that came back through the pool from the peer node.", "peer")
	descPoolDrops = desc("mailroom_pool_dropped_total",
		"Queued messages the pool dropped at teardowns (also dead letters).", "peer")
	descPoolGuard = desc("mailroom_pool_guard_violations_total",
		"Replies that reached a pool of another incarnation (must stay 0).", "peer")

	// The pools as a whole (proxypool.Manager.Summary).
	descPoolMasters = desc("mailroom_pool_masters",
		"Connection masters running, one per peer node with a pool asked for or built.")
	descPoolConnected = desc("mailroom_pool_connected",
		"Peer nodes with a pool published and in use.")
	descPoolLinks = desc("mailroom_pool_links",
		"Links of the published pools (one per proxy).")
	descPoolReserved = desc("mailroom_pool_reserved_links",
		"Pool links reserved against MaxPoolLinks for every master, built or not.")
	descPoolLazy = desc("mailroom_pool_lazy_builds_total",
		"Pools started because traffic to a peer took the native path (lazy pools).")
	descPoolIdle = desc("mailroom_pool_idle_teardowns_total",
		"Lazy pools torn down after IdleTimeout without traffic.")
	descPoolCap = desc("mailroom_pool_cap_refusals_total",
		"Pools not started because of MaxPoolLinks (the peer is served natively).")
)

func describePools(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		descPoolProxies, descPoolBatch, descPoolBytes, descPoolQueue, descPoolQueueBytes, descPoolReplies, descPoolDrops, descPoolGuard,
		descPoolMasters, descPoolConnected, descPoolLinks, descPoolReserved, descPoolLazy, descPoolIdle, descPoolCap,
	} {
		ch <- d
	}
}

// collectPools exports the pool toward each of peers (sorted; at most
// maxPeers of them: pools are per peer node, so the rest is left out
// rather than summed into a histogram of mixed peers).
func collectPools(ch chan<- prometheus.Metric, m *proxypool.Manager, peers []string) {
	sum := m.Summary()
	gauge(ch, descPoolMasters, float64(sum.Masters))
	gauge(ch, descPoolConnected, float64(sum.Connected))
	gauge(ch, descPoolLinks, float64(sum.PoolLinks))
	gauge(ch, descPoolReserved, float64(sum.ReservedLinks))
	counter(ch, descPoolLazy, sum.LazyBuilds)
	counter(ch, descPoolIdle, sum.IdleTeardowns)
	counter(ch, descPoolCap, sum.CapRefusals)
	if len(peers) > maxPeers {
		peers = peers[:maxPeers]
	}
	for _, p := range peers {
		info := m.ConnectionInfo(p)
		st := m.Stats(p)
		gauge(ch, descPoolProxies, float64(info.Proxies), p)
		ch <- prometheus.MustNewConstHistogram(descPoolBatch, st.Batches, float64(st.Messages), batchBuckets(st.Hist), validLabel(p))
		counter(ch, descPoolBytes, st.Bytes, p)
		gauge(ch, descPoolQueue, float64(st.QueueDepth), p)
		gauge(ch, descPoolQueueBytes, float64(st.QueueBytes), p)
		counter(ch, descPoolReplies, st.Replies, p)
		counter(ch, descPoolDrops, st.DeadLetters, p)
		counter(ch, descPoolGuard, st.GuardViolations, p)
	}
}

// batchBuckets turns proxypool's batch-size histogram (bucket 0: size 1;
// bucket i: sizes in (2^(i-1), 2^i]; the last: everything larger) into
// cumulative Prometheus buckets with upper bounds 1, 2, 4, ... 2^(n-2),
// the last bucket going to +Inf.
func batchBuckets(h [12]uint64) map[float64]uint64 {
	out := make(map[float64]uint64, len(h)-1)
	var cum uint64
	for i := 0; i < len(h)-1; i++ {
		cum += h[i]
		out[float64(uint64(1)<<i)] = cum
	}
	return out
}
