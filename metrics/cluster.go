package metrics

import (
	"github.com/mailroom-go/mailroom/cluster"
	"github.com/prometheus/client_golang/prometheus"
)

// WithCluster exports the grains of c (mailroom_cluster_* families): the
// counters of cluster.Cluster.Stats, and per kind the activations running
// here and the nodes hosting it. Package cluster imports only what
// metrics imports already (actor, remote, discovery) and not Prometheus,
// so this option costs metrics users nothing and cluster users no
// Prometheus.
func WithCluster(c *cluster.Cluster) Option { return func(o *options) { o.cluster = c } }

// maxKinds bounds the kinds exported per family: the kinds come from the
// peers' announcements too; past it the rest is left out.
const maxKinds = 256

// The cluster layer (WithCluster).
var (
	descClusterActivations = desc("mailroom_cluster_activations",
		"Grain activations running on this node now, per kind it hosts.", "kind")
	descClusterHosts = desc("mailroom_cluster_kind_hosts",
		"Live nodes hosting the kind in this node's view (this one included).", "kind")
	descClusterStarted = desc("mailroom_cluster_activations_total",
		"Grain activations started on this node.")
	descClusterPassivations = desc("mailroom_cluster_passivations_total",
		"Activations that ended other than by a handover, a lost lease or the node stopping: idle (Kind.IdleTimeout), or stopped (by the grain itself, usually).")
	descClusterHandovers = desc("mailroom_cluster_handovers_total",
		"Activations stopped here because another node owns their identity now.")
	descClusterHandoffs = desc("mailroom_cluster_handoffs_total",
		"Activations started here after the previous owner handed the identity off (Static: it stopped its activation first).")
	descClusterLeases = desc("mailroom_cluster_lease_events_total",
		"Owner lease events: acquired, lost (while its activation ran), busy (an activation refused: held elsewhere).", "event")
	descClusterCache = desc("mailroom_cluster_placement_lookups_total",
		"Placement cache lookups by result: hit (one send), miss (an activation call first).", "result")
	descClusterRefusals = desc("mailroom_cluster_not_owner_refusals_total",
		"\"Not the owner\" refusals this node answered (not executed).")
	descClusterRetries = desc("mailroom_cluster_retries_total",
		"Refusals and stale placements this node retried.")
)

func describeCluster(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		descClusterActivations, descClusterHosts, descClusterStarted, descClusterPassivations, descClusterHandovers,
		descClusterHandoffs, descClusterLeases, descClusterCache, descClusterRefusals, descClusterRetries,
	} {
		ch <- d
	}
}

func collectCluster(ch chan<- prometheus.Metric, c *cluster.Cluster) {
	st := c.Stats()
	counter(ch, descClusterStarted, st.Activations)
	counter(ch, descClusterPassivations, st.Passivations)
	counter(ch, descClusterHandovers, st.Handovers)
	counter(ch, descClusterHandoffs, st.Handoffs)
	counter(ch, descClusterLeases, st.LeasesAcquired, "acquired")
	counter(ch, descClusterLeases, st.LeasesLost, "lost")
	counter(ch, descClusterLeases, st.LeasesBusy, "busy")
	counter(ch, descClusterCache, st.CacheHits, "hit")
	counter(ch, descClusterCache, st.CacheMisses, "miss")
	counter(ch, descClusterRefusals, st.Refusals)
	counter(ch, descClusterRetries, st.Retries)
	kinds := c.Kinds()
	if len(kinds) > maxKinds {
		kinds = kinds[:maxKinds]
	}
	for _, k := range kinds {
		if k.Hosted {
			gauge(ch, descClusterActivations, float64(k.Activations), k.Name)
		}
		gauge(ch, descClusterHosts, float64(len(k.Hosts)), k.Name)
	}
}
