// Package health serves a node's liveness and readiness probes over HTTP,
// for Kubernetes (livenessProbe, readinessProbe) or any load balancer.
//
// Usage:
//
//	node, _ := remote.Start(ctx, sys, cfg)
//	probe, _ := health.New(node, health.Config{
//		Needs: map[string]health.Check{"db": db.PingContext},
//	})
//	mux.Handle("/", probe.Handler()) // GET /livez and GET /readyz
//
// Liveness (/livez) answers 200 while the node's loops run: a request
// through the actor scheduler to the probe's own actor comes back within
// Config.LiveTimeout, and the System has not stopped. It fails once the
// cluster declared this incarnation dead (discovery reported it down, the
// node stops itself) or the scheduler is stuck, so a restart, which is a
// new incarnation, is the right answer to it. It never looks at peers.
//
// Readiness (/readyz) answers 200 while the node is registered in
// discovery (remote.Start returned, so the provider registered it; it has
// not been declared dead), every Config.Needs check passes, and the node
// is not draining or stopping. A draining node answers 503 so the load
// balancer stops sending it new work while the calls it runs finish.
//
// The cold-start rule: readiness never waits on other nodes' readiness.
// Discovery must list nodes that are not ready yet (the Kubernetes
// provider lists every running pod, ready or not), so that nodes link to
// each other before any of them is ready; if readiness waited for peers
// that are only listed once ready, a cold start would form no cluster, or
// several (GoAkt #1265). A Needs check may test what this node needs
// locally (a database, a cache, a link to a named peer with
// remote.Node.WaitPeer, which needs the peer running, not ready), never
// another node's /readyz.
//
// Both endpoints answer GET and HEAD with a short text body that names
// what failed; they never block longer than their timeouts.
package health
