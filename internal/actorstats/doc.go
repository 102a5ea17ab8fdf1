// Package actorstats holds the types of a mailbox sample, which the actor
// core takes (internal/actorhooks.SampleMailboxes) for mailroom's own
// read-side packages: the observer and the metrics. Package actor imports
// it, so it names no actor type: an actor is its ID on the sampled node.
// Not API.
package actorstats
