// Command patterns shows the group calls on three nodes: this process is
// node "a"; it starts "b" and "c" as child processes (itself again, with
// PATTERNS_CHILD set), links to them, and runs each pattern, printing
// who answered what. Node "zz" is listed in places but does not exist.
//
//	go run ./examples/patterns
package main
