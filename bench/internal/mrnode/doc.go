// Package mrnode runs the mailroom side of a point: the receiver node
// (counting actors named "r<i>", one per writer or one for all, and the
// cast and call functions) and the sender node, whose writers are either
// actors (each operates from its Receive, as its own PID) or plain
// goroutines calling the System's root handle (SendNamed, Cast, Call) as
// code outside any actor does. The path decides one thing: with
// PathPooled both nodes run proxypool.Start (writer actors are sharded
// over the proxies by their PIDs; call replies come back through the
// receiver's pool); with PathNative neither does and every message takes
// the native link.
package mrnode
