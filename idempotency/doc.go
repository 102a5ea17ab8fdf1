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
//	g := idempotency.NewGuard(idempotency.NewMemory(idempotency.MemoryConfig{}), sys.Incarnation())
//	reply, err := g.Run(ctx, key, func(ctx context.Context) ([]byte, error) { return charge(ctx, job) })
//	// on the caller's side, after a may-have-executed failure:
//	st, err := g.Status(key, inc) // inc: the incarnation that took the call
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
// Carrying the key on a remote call (a per-call header) comes with the
// headers of the wire; until then the guard is used inside handlers with
// a key taken from the argument.
package idempotency
