// Package discovery tells a node which other node incarnations exist.
//
// A Provider registers this node and reports member events (up, updated,
// down) that carry incarnations. The remote layer learns each member's
// address from them, links to a member on the first message to it (and a
// proxy pool links to every member that comes up), fails everything
// pinned to an incarnation the moment it is reported down, and stops
// dialling that incarnation's address.
//
// Three providers ship here (discovery/etcd and discovery/kubernetes are
// modules of their own):
//
//   - Static, the embedded default: a fixed seed list, each reported up
//     with incarnation 0 (the handshake tells the real one). The remote
//     layer keeps a native link to every seed: it dials each at start,
//     redials while it is unreachable, and relinks when the link closes,
//     so a seed that restarts is linked again with no user code.
//     Liveness comes from the links' heartbeats alone.
//   - Consul registers a service instance per incarnation with a TTL
//     health check and watches the service with one blocking health
//     query per node, so a node that freezes is declared dead by Consul
//     even while its sockets stay open. It also grants owner leases
//     (Leaser), which the cluster package runs activations under: see
//     consul_lease.go for how a holder cut off from Consul loses its
//     leases before anyone else can take them.
//   - DNS resolves a name's SRV records (or A/AAAA records at one port),
//     such as a Kubernetes headless Service's, every Interval. Each target
//     is a seed as with Static (incarnation 0, liveness from the links,
//     kept linked by the remote layer while it is listed); a record that
//     goes away withdraws the node from the members list and leaves a live
//     link to heartbeats; a failed resolution keeps the last view.
package discovery
