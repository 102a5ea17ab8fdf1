// Package chaos is mailroom's reliability suite: faults injected into
// real node processes under load, each scenario checking what a user
// relies on and printing the figures it measured.
//
// # Running it
//
//	make test-chaos    # every scenario and the 10-minute soak
//	make test          # also runs every scenario but the soak
//	scripts/chaos.sh -run TestReset -chaos.soak=0
//
// The scenarios are tests behind the "chaos" build tag (go test -tags
// chaos ./chaos); scripts/chaos.sh runs them against a Consul dev agent,
// prints one line per scenario,
//
//	scenario=<name> ok=<bool> key=value ...
//
// and keeps the full log and the lines as JSON in .cache/chaos/. The
// figures are published in docs/RELIABILITY.md.
//
// # What every scenario checks
//
//   - Every call ended (none hung), and its error is of the class the
//     fault implies (errors.Is, actor.Outcome): node down (may have
//     executed) for calls a dead or unreachable incarnation had taken;
//     not sent, unreachable or draining (not executed) for the others.
//   - Per-sender order held for what was delivered: ordered sinks check
//     that each sender's sequence numbers only go up.
//   - Nothing was lost silently. On the sending node the books are exact:
//     every send was refused and counted as a dead letter, or taken by a
//     path and then handed to the kernel or dropped and counted. On the
//     receiving node, what was handed to the kernel was delivered, or
//     counted there, or lost in flight when a link or node died; that
//     loss is reported and, where the scenario can measure what was in
//     flight (the kernel's queues from /proc/net/tcp, the fault proxy's
//     buffers, the receiver's bounded mailboxes), bounded by it.
//   - The nodes that were not hit kept serving (a bystander is probed
//     all along).
//
// # The machinery
//
// The harness is test code, in the package's _test.go files (most behind
// the tag), and nothing of it is API: this package exports nothing.
// Nodes under test run in child processes (internal/testing/testnode) with
// Equip: a proxy pool, ordered sinks, a gate that stalls them, and
// counters in a file mapped MAP_SHARED by the child and the test, so
// they survive a SIGKILL. internal/testing/faultnet is the TCP proxy that cuts,
// delays and resets links without privileged networking. LogTap keeps a
// node's log readable when a fault makes it say the same thing a
// million times. Chart draws the soak's samples as SVG.
package chaos
