// Package testutil holds what mailroom's tests share: polling with a
// deadline instead of sleeping, and log sinks.
package testutil
