package sim

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/remote/internal/peers"
)

var (
	seedFlag = flag.Int64("sim.seed", -1, "replay one seed and log its trace")
	seedsN   = flag.Int("sim.seeds", 10000, "seeds TestSeeds runs")
)

// TestSeeds runs -sim.seeds seeds (default 10,000) over GOMAXPROCS
// workers; a failing seed logs its trace (replay it with -sim.seed).
func TestSeeds(t *testing.T) {
	if *seedFlag >= 0 {
		r := Run(Options{Seed: uint64(*seedFlag), Trace: true})
		t.Log("trace:\n" + strings.Join(r.Trace, "\n"))
		if r.Violation != nil {
			t.Fatalf("seed %d: %v", *seedFlag, r.Violation)
		}
		return
	}
	n := *seedsN
	if testing.Short() && raceEnabled {
		n = 1000 // the race detector makes each step ~10x slower; say so in the log
		t.Logf("-short under -race: %d seeds", n)
	}
	start := time.Now()
	s := Many(0, uint64(n), peers.Mutations{}, 0)
	t.Logf("%s in %v", s, time.Since(start).Round(time.Millisecond))
	if s.Failures > 0 {
		r := Run(Options{Seed: s.FirstFailure, Trace: true})
		t.Fatalf("seed %d failed: %v (replay: go test ./remote/internal/sim/ -run TestSeeds -sim.seed=%d)\n%s",
			s.FirstFailure, r.Violation, s.FirstFailure, strings.Join(r.Trace, "\n"))
	}
	if s.Calls == 0 || s.Executed == 0 || s.Seeds != uint64(n) {
		t.Fatalf("the runs did nothing: %s", s)
	}
}

// TestRegressionSeeds replays seeds make sim once failed on.
func TestRegressionSeeds(t *testing.T) {
	for _, seed := range []uint64{
		517568, // never-ended: a call written after its callee's pool link to us was closed silent, its reply written there
		412583, // never-ended: a reply held on a pool link closed silent, with only the caller's pool links left to reroute it on
	} {
		if r := Run(Options{Seed: seed}); r.Violation != nil {
			t.Errorf("seed %d: %v (replay: go test ./remote/internal/sim/ -run TestSeeds -sim.seed=%d)", seed, r.Violation, seed)
		}
	}
}
