package sim

import (
	"testing"

	"github.com/mailroom-go/mailroom/remote/internal/peers"
)

// Each mutation is a deliberate bug in the core; some seed within the
// first 10,000 must catch it with the invariant it breaks. This proves
// the invariants bite.
func TestMutations(t *testing.T) {
	for _, tc := range []struct {
		name      string
		m         peers.Mutations
		invariant string
	}{
		{"skip the fence on a takeover", peers.Mutations{SkipTakeoverFence: true}, "order"},
		{"reply through a stale pool", peers.Mutations{StaleReply: true}, "stale-reply"},
		{"classify a never-sent call as executed", peers.Mutations{UnsentAsExecuted: true}, "class"},
		{"write a call cancelled while queued", peers.Mutations{WriteCancelled: true}, "class"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(0); seed < 10000; seed++ {
				r := Run(Options{Seed: seed, Mutations: tc.m})
				if r.Violation == nil {
					continue
				}
				if r.Violation.Invariant != tc.invariant {
					t.Fatalf("seed %d broke %q, want %q: %v", seed, r.Violation.Invariant, tc.invariant, r.Violation)
				}
				t.Logf("seed %d caught it: %v", seed, r.Violation)
				return
			}
			t.Fatalf("no seed in 10,000 caught it")
		})
	}
}

// TestDeterministic: the same seed gives the same trace.
func TestDeterministic(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		a, b := Run(Options{Seed: seed, Trace: true}), Run(Options{Seed: seed, Trace: true})
		if a.Steps != b.Steps || len(a.Trace) != len(b.Trace) {
			t.Fatalf("seed %d: %d then %d steps", seed, a.Steps, b.Steps)
		}
		for i := range a.Trace {
			if a.Trace[i] != b.Trace[i] {
				t.Fatalf("seed %d differs at line %d:\n%s\n%s", seed, i, a.Trace[i], b.Trace[i])
			}
		}
	}
}
