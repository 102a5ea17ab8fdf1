// Package mrnode runs the mailroom side of a point: the receiver node (one
// counting actor per writer, named "r<i>", and the cast and call
// functions) and the sender node (one writer actor per writer). The path
// decides one thing: with PathPooled both nodes run proxypool.Start, so
// writers, being actors, are sharded over the proxies by their PIDs and
// call replies come back through the receiver's pool; with PathNative
// neither does and every message takes the native link.
package mrnode
