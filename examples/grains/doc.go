// Command grains runs per-user accounts as grains (package cluster) on
// three nodes, each a child process with an HTTP front, over Static
// discovery (no Consul needed). HTTP clients deposit, withdraw and read
// balances through any node; the grain of each user lives on its
// rendezvous owner, keeps its balance in a file of its own (written
// before every answer that changed it, and at passivation and stop) and
// reloads it when it is activated again. Under load one node is killed
// with SIGKILL; the load goes on against the other two, the killed
// node's accounts are activated on them from their files, and the demo
// checks every final balance against what the clients were told: it
// prints a summary line and exits non-zero if a balance is not the
// acknowledged operations plus some of those that may have executed.
//
//	go run ./examples/grains           # or make demo-grains
//	go run ./examples/grains -after 10s -clients 32
package main
