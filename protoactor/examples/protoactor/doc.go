// Command protoactor shows protoactor-go actors over mailroom's remote.
// It runs two nodes, this process ("orders") and a child process
// ("billing") it starts by re-executing itself. Billing's protoactor actor
// answers a charge, and holds every "slow" request without answering.
//
// Orders asks for a charge (RequestFuture, Respond), watches billing's
// actor, makes 1,000 slow requests with a 30 s timeout each, SIGKILLs
// billing once it holds them all, and prints how the futures ended:
//
//	futures=1000 node_down=1000 timed_out=0 other=0 max_fail_ms=N (timeout 30000 ms)
//
// With protoactor-go's own remote every one of them would have waited for
// its 30 s timeout. The actors' code is plain protoactor-go; only the
// setup (bridge.StartNode) and the PIDs' addresses change.
package main
