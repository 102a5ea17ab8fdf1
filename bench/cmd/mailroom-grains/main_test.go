package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// A small run works end to end: every activation and call answered, the
// medians taken from both workloads, the report written.
func TestSmallRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	dir := t.TempDir()
	cfg := config{nodes: 3, callers: 20, ids: 60, calls: 600, rounds: 2, activators: 4, out: dir, name: "t"}
	if err := run(cfg); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, "t.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Activation.Calls != 60 || rep.Activation.Failed != 0 {
		t.Fatalf("activation: %+v", rep.Activation)
	}
	if len(rep.Rounds) != 4 || rep.GrainMedian.Workload != "grain" || rep.NamedMedian.Workload != "named" {
		t.Fatalf("rounds: %+v", rep.Rounds)
	}
	for _, r := range rep.Rounds {
		if r.Failed != 0 || r.PerS <= 0 || r.CPUSPerMill <= 0 || r.P99Ms < r.P50Ms {
			t.Fatalf("round: %+v", r)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "t.md")); err != nil {
		t.Fatal(err)
	}
}
