// Package discovery tells a node which other node incarnations exist.
//
// A Provider registers this node and reports member events (up, updated,
// down) that carry incarnations. The remote layer connects to members
// that are up and fails everything pinned to an incarnation the moment it
// is reported down.
//
// Two providers ship: Static, the embedded default (a fixed seed list;
// liveness comes from link heartbeats), and Consul, which registers a
// service instance per incarnation with a TTL health check and watches
// the service with blocking health queries, so a node that freezes is
// declared dead by Consul even while its sockets stay open.
package discovery
