// Package actorhooks is what the actor core offers mailroom's own
// packages and nobody else: the transport's side of a System (attach a
// transport, deliver what arrived from other nodes, relay watches, run
// registered functions, record dead letters, futures), and a few things
// the supervisor and the test harnesses need. Package actor sets
// internal/hooks.Actor at init to one struct of its functions; this
// package asserts that struct's type once, at its own init (a mismatch
// panics before any test runs), and offers each function as a typed
// variable, called as directly as before. Not API: a user reaches all of
// this through System's methods.
package actorhooks
