// Package discoverytest is the conformance suite every discovery.Provider
// with a backend (Consul, etcd, Kubernetes) passes against that backend, running for
// real: a node frozen past its TTL is reported down and declares itself
// dead, a killed node restarted under its name is a new incarnation, a
// stopped node is deregistered and never registers again, and the watch
// resumes after the backend interrupted it.
//
// Usage, in a provider's tests:
//
//	h := discoverytest.Harness{New: ..., TTL: ttl, Refresh: refresh, Registered: ...}
//	func TestFrozenNode(t *testing.T) { discoverytest.FrozenNode(t, h) }
//
// or discoverytest.Run(t, h) for every test as subtests. The provider's
// tests supply, through Harness, what only they can do: make a provider
// with its TTL, freeze its liveness refresh (as SIGSTOP would), make its
// Stop skip deregistration (as a kill would), ask the backend whether an
// incarnation is registered, and interrupt every watch.
//
// The package is imported by tests only; it is exported so that provider
// modules of their own (discovery/etcd, discovery/kubernetes) can run it.
package discoverytest
