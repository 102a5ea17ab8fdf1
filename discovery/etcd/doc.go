// Package etcd is a discovery.Provider backed by etcd v3, for clusters
// that run an etcd and no Consul agent.
//
// Usage:
//
//	disc, err := etcd.New(etcd.Config{Endpoints: []string{"http://10.0.0.5:2379"}})
//	node, err := remote.Start(ctx, sys, remote.Config{Cookie: cookie, Discovery: disc})
//
// It lives in its own module (github.com/mailroom-go/mailroom/discovery/etcd)
// so that the etcd client and gRPC stay out of the runtime's go.mod.
//
// Registration. Each incarnation is one key, "<Prefix><node>/<incarnation
// as 16 hex digits>", bound to a lease of its own with Config.TTL; its
// value carries the incarnation's address, pool size, Draining and Meta
// (member.go has the format and its limits). The renewer renews the
// lease every RefreshEvery and puts the new value on Update. Stop
// revokes the lease, which deletes the key. A killed node's key goes when
// its lease expires, TTL after its last renewal.
//
// Membership rules. A key put is MemberUp, put again with another
// Addr, PoolWorkers, Draining or Meta MemberUpdated; a key deleted (its
// lease expired or was revoked) is MemberDown, for good: the incarnation
// is never reported up again. So a node frozen past its TTL (SIGSTOP, a
// stuck machine) or cut off from etcd for a TTL is reported down within
// its TTL plus etcd's expiry sweep (500 ms) and the watch latency.
//
// Watching. The watcher lists the prefix, then watches it from the
// listed revision. The etcd client resumes a watch across disconnects
// from the last revision seen; when that revision was compacted
// meanwhile, or etcd cancelled the watch (no leader), the watcher lists
// again (backing off BackoffMin doubling to BackoffMax between
// attempts), and every known incarnation absent from the listing is
// MemberDown: its key went while the watch was not following. While etcd
// is unreachable the last view is kept: nobody is reported up or down.
//
// Self declared dead. A node that cannot renew its lease for TTL, by its
// own monotonic clock from the last renewal etcd answered (it was frozen,
// or etcd was unreachable), that etcd tells its lease is gone, or whose
// watch sees its key deleted, declares itself dead: MemberDown for self
// (remote then stops the node; its restart is a new incarnation), no more
// renewals, Update returns discovery.ErrDeclaredDead, and it revokes its
// lease in case etcd kept it (a leader change extends every lease), so
// that every node agrees.
//
// Goroutines, all owned by the provider and waited for by Stop: the
// renewer (renewals and Update), the watcher, and the notify goroutine,
// which calls notify one event at a time, in order.
package etcd
