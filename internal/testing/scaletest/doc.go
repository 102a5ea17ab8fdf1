// Package scaletest is mailroom's scale test: a cluster of nodes as
// separate OS processes on loopback, one Consul dev agent, a load where
// every node calls, requests and sends to a few random peers, then a
// SIGKILL of several nodes at once and their restart under the same
// names. It measures what grows with the cluster (links, file
// descriptors, memory, goroutines, requests to the agent) and what must
// not break (every call to a killed node ends, none is answered by
// another incarnation, every node detects the death within TTL + 1 s),
// prints one line per cluster size,
//
//	scale nodes=32 converge_ms=… links_per_node_max=… fds_per_node_max=… rss_mb_max=… consul_req_per_s=… detect_ms_max=… hung=0 wrong_incarnation=0
//
// and writes docs/SCALE.md with a chart and the 1,000-node estimate.
//
// # Running it
//
//	make test-scale                  # 8, 16 and 32 nodes; rewrites docs/SCALE.md
//	scripts/scale.sh -scale.sizes=32 # one size; the docs untouched (add -scale.doc=docs/SCALE.md)
//
// The test is behind the "scale" build tag (go test -tags scale
// ./internal/testing/scaletest); scripts/scale.sh runs it against a Consul dev
// agent (scripts/consul.sh) and keeps the log and the results as JSON in
// .cache/scale/. A small run (4 nodes, 1 killed) is an ordinary test, so
// `make test` keeps the harness working.
//
// # The machinery
//
// The test binary re-executes itself as each node (internal/testing/testnode);
// PreHook and Hook install on every node what the load needs (functions
// and actors that answer with the node's incarnation, a sink, long calls
// that only end when their caller or the node goes) and a reporter that
// writes the node's figures, read through the public accessors
// (remote.Node Stats and hooks, proxypool.Manager ConnectionInfo), to a
// JSON file every 200 ms, which survives a SIGKILL. SIGUSR1 starts the
// node's load and SIGUSR2 stops it. The parent reads file descriptors,
// resident memory and CPU time from /proc, and puts a counting HTTP
// proxy (internal/testing/consultest.Proxy) in front of the agent for each
// node, so that every request a node makes to Consul is counted, by kind.
//
// Nothing here is API.
package scaletest
