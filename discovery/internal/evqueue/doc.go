// Package evqueue is the event queue every discovery provider (Consul in
// package discovery, the etcd and Kubernetes modules) puts between the
// goroutines that find changes (watcher, renewer) and the one goroutine
// that calls the runtime's notify: pushes never block, notify sees every
// event once, in push order, one at a time.
//
// Usage:
//
//	q := evqueue.New[discovery.Event]()
//	go func() { defer close(done); q.Run(abort, notify) }() // the notify goroutine
//	q.Push(evs...)                                           // from any goroutine
//	q.Close()                                                // Stop: Run delivers what is queued, then returns
//
// The queue is unbounded: its pushers are the provider's own loops, which
// push at most one event per member change, so a peer cannot grow it
// faster than the provider's backend tells of changes. The type is
// generic so that this package need not import package discovery (which
// uses it).
//
// Internal to discovery/: the etcd and Kubernetes providers, whose module
// paths are under github.com/mailroom-go/mailroom/discovery/, import it.
package evqueue
