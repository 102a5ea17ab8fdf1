// Package kubernetes is a discovery.Provider backed by the Kubernetes API,
// for nodes that run in pods: no Consul agent, no static seeds.
//
// Usage (in a pod; out of the cluster set Config.Kubeconfig or KUBECONFIG):
//
//	disc, err := kubernetes.New(kubernetes.Config{LabelSelector: "app=shop"})
//	node, err := remote.Start(ctx, sys, remote.Config{Cookie: cookie, Discovery: disc})
//
// It lives in its own module (github.com/mailroom-go/mailroom/discovery/kubernetes)
// so that client-go stays out of the runtime's go.mod.
//
// Members come from two kinds of objects in Config.Namespace:
//
//   - the pods that match Config.LabelSelector, read from the API (get,
//     list, watch on pods);
//   - one coordination.k8s.io/v1 Lease per node, "<LeasePrefix><node>",
//     which the node creates at Start, renews every RenewEvery as its TTL
//     heartbeat, and deletes at Stop (get, list, watch, create, update,
//     patch, delete on leases). The lease carries the node's incarnation
//     (its holderIdentity is Member.ID), address, pool size, Draining and
//     Meta as annotations, and the name and UID of the node's pod.
//
// deploy/kubernetes/rbac.yaml grants exactly these; a provider that lacks
// one fails at Start (or logs, later) with an error naming the missing
// permission.
//
// Membership rules. An incarnation is a member (MemberUp, then
// MemberUpdated when Addr, PoolWorkers, Draining or Meta change) while:
//
//   - its lease was seen renewed within the lease's TTL, timed by the
//     observer's own clock (no clock skew between nodes matters);
//   - the pod the lease names exists with the same UID (a pod recreated
//     under the same name is another pod: a restarted pod is a new
//     incarnation at its new address) and is Running;
//   - the pod is Ready, or the member drains: the lease says Draining (a
//     draining node's pod turns not ready on purpose while its calls
//     finish), or the pod is terminating.
//
// A terminating pod (deletionTimestamp set) is reported draining
// (MemberUpdated, Draining true), not down: Kubernetes marks a pod
// terminating before preStop and SIGTERM, and the node then drains
// within the grace period; reporting it down at once would fail the calls
// it is finishing, and its own view would declare it dead. It is down
// when its node stops (the lease is deleted), its lease expires, or the
// kubelet kills it (not Running) or the pod object goes.
//
// When any of these stops holding, the incarnation is MemberDown, for
// good: it is never reported up again. So a pod deleted, not ready, or
// whose lease expired (the process froze: SIGSTOP, a stuck machine) is
// reported down within its lease TTL plus the watch latency, and
// everything pinned to it fails then. A node that sees itself reported
// down, or whose renewer finds it did not run for about a TTL (it was
// frozen; it gives up a little before the TTL, at TTL - min(RenewEvery,
// TTL - RenewEvery)/2, since others may have reported it down by then),
// declares itself dead: MemberDown for self, which makes remote stop the
// node; its restart is a new incarnation.
//
// Not-ready pods, a deliberate choice: a pod counts once it is Ready, so
// a pod the kubelet marks not ready leaves the cluster. This cannot
// deadlock a cold start only because readiness never waits on other
// nodes (package health's cold-start rule): every node turns ready on its
// own, then they find each other. Do not gate readiness on the cluster.
//
// Watching. The provider lists pods and leases, then watches both from
// the listed resource versions, reopening a watch the server ends from
// the last version seen; on 410 Gone it relists. API errors back off
// (BackoffMin doubling to BackoffMax, with jitter).
//
// While the API is unreachable the last view is kept: nobody is reported
// up or down, this node included (an unreachable API is not a dead
// cluster). A node knows it is cut off when its own renewals stop
// showing: it times the others' leases only while it has seen its own
// lease renewed within 1.5 RenewEvery (on the watch or in a list). Past
// that its view is blind, and an unrenewed lease means a stale view, not
// a dead peer; this holds whether the API refuses connections or keeps
// watches open that show nothing (an apiserver shutting down does so).
// When its renewals show again, or after a relist that follows an error,
// every lease gets one TTL from then to be seen renewed, so a node that
// froze meanwhile is found one TTL after the API is back. An open watch
// that shows none of this node's renewals for a TTL is dropped and the
// provider relists.
//
// A node cut off from the API alone (not from its peers) is reported down
// by the others after a TTL, for good (it is never reported up again,
// even if its lease is renewed later); its own view, blind meanwhile,
// reports nobody down, and once back, the first peer it dials refuses it
// as declared dead, which stops it. Failed
// renewals never kill a node by themselves, whatever the error: the whole
// cluster may be cut off alike, as in an apiserver restart (a restarted
// apiserver even answers Forbidden for a moment, before its RBAC cache
// is filled).
//
// Goroutines, all owned by the provider and waited for by Stop: the
// renewer (lease renewals and Update), the watcher, and the notify
// goroutine, which calls notify one event at a time, in order.
package kubernetes
