// Package metrics exports a node's figures to Prometheus: one call,
// Register, adds a collector for every layer (actors, remote links and
// liveness, proxy pools, discovery) and, when asked, services' own.
//
//	reg := prometheus.NewRegistry()
//	err := metrics.Register(reg, node, metrics.WithPools(pools), metrics.WithServices(svc))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Everything is read at scrape time from the layers' own counters and
// accessors (remote.Node.Stats, its values through remote.Stats.Each, Links
// and Pending, proxypool.Manager.Stats,
// supervisor.Restarts, a mailbox sample shared with the observer): no
// goroutine, nothing per message. Names follow Prometheus conventions:
// prefix mailroom_, base units, _total on counters. Every family carries
// the node's name in the label mailroom_node (WithNodeLabel renames it or
// leaves it to mailroom_node_info alone), never node: a scrape
// configuration's own node target label is kept as it is beside it.
// docs/METRICS.md has the scrape configuration and queries. Labels are bounded:
// per peer node (and, for pending calls, its current incarnation) at
// most, never per actor or per call. The README lists every family.
//
// The mailbox depth histogram (mailroom_actor_mailbox_depth) is a
// snapshot of every actor at the last sample, not counts accumulated over
// time: read its buckets as they are (histogram_quantile over the raw
// buckets), never through rate(). The text exposition has no gauge
// histogram, which is what it is.
//
// The deepest mailboxes are exported by rank (mailroom_actor_mailbox_deepest
// with rank 1..5), without the actors' identity: which actor it is
// changes from scrape to scrape and would make a series per actor; the
// observer shows who they are.
package metrics
