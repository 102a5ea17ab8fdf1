// Package chaos is mailroom's reliability suite: fault injection against
// real node processes, with every scenario asserting that each call
// ended with the right error class, that per-sender order held for what
// was delivered, and that every message is accounted for (delivered,
// dropped and counted, or bounded as in flight when a node died).
//
// The scenarios are tests behind the "chaos" build tag:
//
//	make test-chaos    # every scenario, the 10-minute soak included
//
// This file is a placeholder; see docs/RELIABILITY.md.
package chaos
