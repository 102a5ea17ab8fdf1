// Package actorhooks is what the actor core offers mailroom's own
// packages and nobody else: the transport's side of a System (attach a
// transport, deliver what arrived from other nodes, relay watches, run
// registered functions, record dead letters, futures), and a few things
// the supervisor and the test harnesses need. Package actor fills the
// slots of internal/hooks at init; this package asserts their types once,
// at its own init (a mismatch panics before any test runs), and offers
// them as typed functions. Not API: a user reaches all of this through
// System's methods.
package actorhooks
