// Package mailroom is an actor runtime for Go services with
// location-transparent remote mailboxes: actors and PIDs, supervision
// trees configured in code, and Send, Request, Cast and Call that work the
// same to a local or a remote actor.
//
// This package holds no code; the runtime is in its subpackages:
//
//   - actor: the node (System), PIDs, actors and mailboxes, registered
//     names, watches, dead letters, registered functions, the error
//     taxonomy (actor.Outcome);
//   - supervisor: OTP-style supervision trees;
//   - remote: authenticated links, the wire protocol (remote/SPEC.md), the
//     native path and liveness instead of timeouts;
//   - proxypool: the pooled path: sharded batching proxies per peer;
//   - discovery: the Provider interface, Static seeds and Consul.
//
// The examples of this package are the README's API tour.
package mailroom
