// Package tally counts completed operations where the benchmark counts
// them: at the receiver for send and cast (delivered, not enqueued), at
// the sender for call (returned). A point is complete when every writer's
// count reached its target (Hit) or, without per-writer identity, when
// the total did (HitAny); the moment is taken on the goroutine that
// completed it.
package tally
