// Package mailroom is an actor runtime for Go services with
// location-transparent remote mailboxes: actors and PIDs, supervision
// trees configured in code, and Send, Request, Cast and Call that work the
// same to a local or a remote actor.
//
// This package holds no code; the runtime is in its subpackages:
//
//   - actor: the node (System), PIDs, actors and mailboxes, registered
//     names, watches, dead letters, registered functions, the error
//     taxonomy (actor.Outcome); actor.Caller, what the System, a Sender
//     handle and an actor's Context share to send, request and call, with
//     typed helpers (actor.RequestAs, actor.CallAs);
//   - actor/pidpb: a PID as a protobuf message for users' own messages;
//   - supervisor: OTP-style supervision trees;
//   - remote: authenticated links, the wire protocol (internal/wire/SPEC.md), the
//     native path and liveness instead of timeouts;
//   - proxypool: the pooled path: sharded batching proxies per peer;
//   - discovery: the Provider interface, Static seeds and Consul;
//   - patterns: group calls (CallOne, CallAny, CallAll, CallAllWait,
//     CastOne, CastAll) run by supervised coordinators;
//   - services: named, versioned services across the cluster, with honest
//     retries and graceful drains.
//
// chaos (the fault-injection suite) and internal are not API.
//
// The examples of this package are the README's API tour.
package mailroom
