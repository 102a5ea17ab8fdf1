package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/bench/internal/harness"
	"github.com/mailroom-go/mailroom/bench/internal/report"
	"github.com/mailroom-go/mailroom/bench/internal/spec"
)

// TestMain lets the test binary be re-executed as a node role, as the
// command is.
func TestMain(m *testing.M) {
	if isRole, err := runRole(); isRole {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestEndToEnd runs tiny points on every path, with two real processes
// each, and checks that every operation was counted and measured.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes; run without -short")
	}
	set := spec.Set{Name: "e2e", Rounds: 1, RawFrames: 20000}
	for _, path := range spec.Paths {
		set.Points = append(set.Points,
			spec.Spec{Op: spec.OpSend, Path: path, Payload: "data", Writers: 20, PerWriter: 50, Warmup: 2},
			spec.Spec{Op: spec.OpCast, Path: path, Payload: "tiny", Writers: 20, PerWriter: 20, Warmup: 2},
			spec.Spec{Op: spec.OpCall, Path: path, Payload: "1KiB", Writers: 20, Pace: 20 * time.Millisecond, PerWriter: 5, Warmup: 1},
		)
	}
	var progress testWriter
	progress.t = t
	res, err := harness.Run(set, harness.Options{Out: progress, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.RawTCPMsgsPerS <= 0 {
		t.Errorf("raw tcp: %v", res.RawTCPMsgsPerS)
	}
	if len(res.Points) != len(set.Points) {
		t.Fatalf("%d points, want %d", len(res.Points), len(set.Points))
	}
	for _, p := range res.Points {
		if p.Errors != 0 || p.TimedOut || p.AchievedPerS <= 0 || p.CPUSPerMillion < 0 || p.WireBytesPerMsg <= 0 || p.SenderRSSMB <= 0 {
			t.Errorf("%s %s %s: %+v", p.Op, p.Path, p.Payload, p)
		}
		if p.Note != "" { // a node that exited badly (a race report, a panic) says so here
			t.Errorf("%s %s %s: %s", p.Op, p.Path, p.Payload, p.Note)
		}
		if p.Path == spec.PathPooled && p.MeanBatch <= 0 {
			t.Errorf("pooled %s without a mean batch", p.Op)
		}
		if p.Op == spec.OpCall && p.LatP50Ms <= 0 {
			t.Errorf("%s call without latency", p.Path)
		}
		if p.PaceMs > 0 && p.ElapsedS < 0.08 {
			t.Errorf("%s paced call finished in %.3fs, faster than its pace allows", p.Path, p.ElapsedS)
		}
	}
	if _, err := report.WriteAll(res, t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}
