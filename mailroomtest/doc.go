// Package mailroomtest is the testkit for programs built on mailroom: a
// cluster of in-process nodes over an in-memory network the test can
// break, a probe actor to send to and watch from, and a fake clock that
// drives timers.
//
// # Usage
//
// StartCluster (or NewCluster outside a test) starts N nodes, named
// "n1", "n2", ..., each an actor.System with its remote layer, and links
// every pair. Partition, Heal, Delay, Kill and Restart (a new
// incarnation on the same address) break and mend it while the test
// runs; the nodes see what they would see of a real network: links that
// fail, dials refused, writes that take longer, a peer that is gone and
// a new incarnation of it.
//
// A Probe is an actor whose messages the test takes with ExpectMessage,
// ExpectNoMessage and ExpectTerminated, each bounded by the duration it
// is given, so a test waits for what it expects instead of sleeping.
//
// A FakeClock given as actor.Config.Clock (or ClusterConfig.Clock) moves
// only when the test calls Advance: timers, receive timeouts and cron
// schedules fire then.
//
// The caller's duties: close what it starts (StartCluster closes its
// cluster when the test ends; NewCluster's caller calls Close), and
// register on every node the protobuf messages that cross nodes
// (ClusterConfig.Types). The in-memory network joins only the cluster's
// own nodes; nothing listens on a socket.
package mailroomtest
