// Package testnode runs mailroom nodes in separate OS processes for tests:
// the test binary re-executes itself as a child node.
//
// Usage: call testnode.MaybeRunChild() first thing in TestMain; then
// testnode.Start(t, Options{...}) starts a child and returns once it
// listens. The child registers the catalog of functions and actors in
// catalog.go.
package testnode
