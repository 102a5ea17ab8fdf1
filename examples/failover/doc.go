// Command failover shows liveness instead of timeouts: it starts a second
// node as a child process, makes 1,000 concurrent calls to a function
// that sleeps 10 s there, SIGKILLs the child once every call is running,
// and prints how the calls ended:
//
//	calls=1000 not_executed=0 may_have_executed=1000 executed=0 hung=0 max_fail_ms=N
//
// N is the longest time from the kill to a call's return. No call carries
// a timeout: each is pinned to the child's incarnation and fails the
// moment its link closes.
package main
