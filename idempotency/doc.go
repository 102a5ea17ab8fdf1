// Package idempotency turns "may have executed; check before retrying"
// into a call: a handler run under a key records the key before it works
// (running), and its result after (done, or failed with its error); a
// repeat of the key gets the recorded result, or waits for the running
// attempt; Status answers ran / running / never-ran, and after never-ran
// the key is fenced, so a late copy of the call still queued somewhere is
// refused as not executed instead of running after the answer.
//
// # Usage
//
// The callee, one guard per node:
//
//	g := idempotency.NewGuard(idempotency.NewMemory(idempotency.MemoryConfig{}), sys.Incarnation())
//	err := idempotency.Serve(sys, g)                     // Status, callable from any node
//	err = sys.Register("charge", idempotency.Handler(g, charge)) // keyed calls run once per key
//	props.ReceiveMiddleware = []actor.ReceiveMiddleware{idempotency.Middleware(g)} // keyed requests to an actor
//
// The caller carries the key (the header HeaderKey) and, after a
// may-have-executed failure, asks the node whose incarnation took the call:
//
//	ctx = idempotency.WithKey(ctx, job.Id)
//	res, err := sys.Call(ctx, "billing-1", "charge", job)
//	st, serr := idempotency.Status(ctx, sys, "billing-1", job.Id, inc) // Done: st.Result()
//	// NeverRan: call again with ctx = idempotency.WithAttempt(ctx, idempotency.AttemptFrom(ctx)+1)
//
// Inside a handler, Guard.Run guards any piece of work under a key taken
// from the argument; Guard.Status answers locally. services.Function.Guard
// wires a guard into a service's function, and services.Call then settles
// may-have-executed attempts of keyed calls by itself. docs/FAILURES.md
// shows the whole loop.
//
// # Stores and their guarantees
//
//   - Memory (the default): bounded in count and bytes, records expire
//     after a TTL. It is lost with the incarnation: asked about a call an
//     earlier incarnation took, Status is ErrRecordLost, never a guess.
//   - Dir: one file per key in a directory, written and synced before
//     the handler runs and after it ends; it survives a restart of the
//     node. A record left "running" by an incarnation that is gone reads
//     as Interrupted: the handler may have done part of its work.
//
// Keys are bounded (MaxKeyBytes) and so is every store, against a
// hostile caller: a full store refuses new keys with ErrStoreFull, not
// executed.
//
// Status is a function (StatusFunction) whose messages are part of the
// wire protocol (internal/wire/SPEC.md, "Idempotency status").
package idempotency
