// Command observer shows the live view of a three-node cluster: this
// process is node "a" and serves the observer; nodes "b" and "c" run as
// child processes of it. Node a calls both under light load through the
// proxy pools, runs a supervision tree whose worker crashes now and then,
// and, after a few seconds, kills c with SIGKILL and starts it again: the
// page shows c's old incarnation down and the new one up.
//
//	go run ./examples/observer            # until Ctrl-C
//	go run ./examples/observer -for 20s   # a bounded run (CI smoke test)
//
// It prints the page's URL (127.0.0.1:7070 by default, -addr to change;
// a non-loopback address needs -token).
package main
