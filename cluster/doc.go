// Package cluster holds virtual actors (grains) addressed by kind and
// identity, placed over the live node incarnations discovery reports:
// Start a Cluster on a node with the kinds it hosts, then Send, Request or
// RequestAs to (kind, identity) from any node. docs/CLUSTER.md states the
// guarantees per discovery provider.
//
// # Placement
//
// A node hosts the kinds it registers; it advertises them in its
// discovery Meta under "cluster_kinds" (a comma-separated list). The
// owner of (kind, identity) is chosen by rendezvous (highest random
// weight) hashing over the live incarnations that host the kind: every
// candidate gets the weight hash(kind, identity, node, incarnation) and
// the highest wins. A node that joins takes from every other node only
// the identities that now hash to it (about 1/N of them), and a node that
// leaves hands out only its own; no node needs to tell any other
// anything for the others to agree, so N nodes joining cost no O(N²)
// traffic, only the membership events discovery delivers anyway. The
// incarnation is part of the weight, so a node restarted under the same
// name is a new candidate.
//
// # At most one activation
//
// Placement alone cannot promise one activation: two nodes whose
// membership views differ for a moment disagree on the owner. Where the
// provider grants leases (discovery.Leaser; Consul does), a node activates
// a grain only under the owner lease of its identity: a KV key acquired
// with a Consul session bound to the node's own TTL check. The lease is
// lost when that check goes critical (the node froze, crashed, or was cut
// off from Consul), and the holder also counts the lease as lost, on its
// own monotonic clock, once TTL has passed since it sent the last refresh
// Consul acknowledged: that moment comes before Consul can expire the
// check (the TTL runs from when Consul received the refresh, which is
// later than when it was sent), so a node cut off stops its activations
// before another node can take the key. The session's lock delay adds a
// margin on top for the old holder to finish stopping.
//
// With Static there are no leases: a node activates an identity when it
// is the rendezvous owner in its own view, and only after the previous
// owner in that view (the runner-up) has handed it off: asked by the new
// owner before its first activation, the previous owner stops its
// activation (what it is handling finishes, what is queued behind fails
// as not executed) and answers; messages reaching the new owner
// meanwhile wait up to 2 s, then are refused as not executed
// (CodeHandoffPending) and retried by their senders (handoff.go). Two
// activations can still overlap while the views disagree: from a link's
// death on one side until the other side's heartbeat declares it
// (remote.Config's liveness bound), and for as long as a partition lasts.
// docs/CLUSTER.md gives the measured windows (chaos scenarios
// grain-partition-static and grain-churn-static).
//
// # Messages
//
// Send, Request and Call to (kind, identity) take any actor.Caller, with
// typed RequestAs and CallAs helpers. A node keeps a placement cache from
// identity to the owner's PID, so a message to a known grain is one
// pooled remote send. A node that receives a message for an identity it
// does not own refuses it with "not the owner" (not executed); the sender
// drops its cache entry, re-resolves and retries once, which is safe
// because nothing ran. A call pinned to an activation whose node dies
// fails at once as may-have-executed (actor.ErrNodeDown, from the remote
// layer); the next message activates the grain on the new owner once the
// old lease is gone.
//
// # Passivation
//
// A grain is passivated after an idle time per kind (the actor's receive
// timeout, Context.SetReceiveTimeout) or when it asks to be; its state is
// the user's to save and reload on the next activation.
//
// # Call, singletons, topics
//
// Call and CallAs are Request with protobuf in and out, as actor's Call
// is beside Request. A Singleton is a grain of a kind of its own with one
// identity, started by its owner without waiting for a message, under the
// same lease. Topics: Subscribe an actor of this node, Publish from any
// node: one network message per node with subscribers, fanned out there
// through a bounded lane per subscriber. docs/CLUSTER.md states what each
// guarantees.
//
// # Observing
//
// Stats counts activations, passivations, handovers, lease events,
// placement cache hits and misses, refusals and retries; Kinds lists the
// kinds with their hosts. metrics.WithCluster exports both to
// Prometheus; Panel is the observer's panel of the cluster.
package cluster
