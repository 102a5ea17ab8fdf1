// Package testing holds nothing itself; its subdirectories are mailroom's
// test harnesses, kept apart from the runtime's internals.
//
// internal/ has two kinds of package. The runtime internals stay at
// internal/<name> (wire, nodename, hooks, actorhooks, actorstats, future,
// poolpath, rendezvous, discoveryhooks, clusterpb, idempotencypb): a
// program built on mailroom links them. The harnesses live here, at
// internal/testing/<name>: a real Consul agent and a proxy in front of it
// (consultest), a fault-injecting TCP proxy (faultnet), an in-memory
// network (memnet), a fake clock (fakeclock), nodes in child processes
// (testnode), the multi-process Consul tests (clustertest), the scale test
// (scaletest), the messages tests send (testpb) and the helpers they share
// (testutil).
//
// The rule that keeps the split honest: no runtime package imports a
// package under internal/testing, except through _test.go files, the
// chaos suite, the scale tooling and the public testkit (mailroomtest,
// which is built on memnet and fakeclock). `go list -deps` of any runtime
// package names nothing from here.
package testing
