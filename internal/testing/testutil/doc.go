// Package testutil holds what mailroom's tests share: polling with a
// deadline instead of sleeping, log sinks, and payloads encoded by hand.
package testutil
