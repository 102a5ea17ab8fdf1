// Package memnet is an in-memory network for tests: listeners and
// connections made of net.Pipe, addressed by name, private to one
// Network value (no global state).
package memnet
