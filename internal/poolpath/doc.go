// Package poolpath is the one interface between the remote layer and the
// pooled path (proxypool): what a node offers its connection masters and
// proxies (Host, Link) and what a published pool shows them (Pool). Not
// API: remote.Node exports no pool hooks, and users never see these.
//
// remote implements Host, Pool and Link on unexported types (a pool's
// queues, batching, call claims and the incarnation guard still live in
// remote); proxypool gets a node's Host from internal/hooks.PoolHost and
// uses remote's pools only through these interfaces.
//
// # Who calls what
//
//   - proxypool calls Host from its connection masters (one actor per
//     peer node, so never concurrently for one node) and its manager, and
//     Link from its proxies (one actor per link), holding none of its own
//     locks.
//   - remote routes sends, casts, calls, requests and replies into a
//     published pool's queues; the proxies drain them (Link.Flush).
//
// # Order across a change of path
//
// A sender's messages keep their order when its path changes. Publish
// pings the native link before the route changes (nothing native can
// follow: the peer's path lock is held) and gives the pool that ping's
// barrier: the pool's links write nothing before the peer has delivered
// what the native path carried. Unpublish (and a Publish that replaces a
// pool), while the peer lives, queues a fence naming the pool's links on
// the native link in the same step that moves the route: the peer
// delivers nothing native after it before it has read the pool's links to
// their end, so their owner writes what they hold and half-closes them
// (Link.Finish). See internal/wire/SPEC.md, Fences.
package poolpath
