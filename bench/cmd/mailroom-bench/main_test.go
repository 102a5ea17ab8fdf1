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

// TestEndToEnd runs tiny points on every path (protoactor-bridge
// included), with two real processes each, and checks that every
// operation was counted and measured.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes; run without -short")
	}
	set := spec.Set{Name: "e2e", Rounds: 1, RawFrames: 20000, RawRTTs: 300}
	actors := func(op, path, payload string, writers, m, warmup int, pace time.Duration) spec.Spec {
		return spec.Spec{Op: op, Path: path, Payload: payload, Writers: writers, WriterKind: spec.KindActor, Receivers: spec.ReceiversPerWriter,
			Pace: pace, PerWriter: m, Warmup: warmup}
	}
	goroutines := func(op, path, payload string, writers int, receivers string, m, warmup int) spec.Spec {
		return spec.Spec{Op: op, Path: path, Payload: payload, Writers: writers, WriterKind: spec.KindGoroutine, Receivers: receivers,
			PerWriter: m, Warmup: warmup}
	}
	for _, path := range spec.Paths {
		set.Points = append(set.Points,
			actors(spec.OpSend, path, "data", 20, 50, 2, 0),
			actors(spec.OpCast, path, "tiny", 20, 20, 2, 0),
			actors(spec.OpCall, path, "1KiB", 20, 5, 1, 20*time.Millisecond),
			actors(spec.OpSend, path, "data-vt", 20, 50, 2, 0),
			goroutines(spec.OpSend, path, "bytes", 20, spec.ReceiversOne, 100, 2),
			goroutines(spec.OpSend, path, "bytes", 20, spec.ReceiversPerWriter, 50, 2),
			goroutines(spec.OpCall, path, "data", 20, spec.ReceiversPerWriter, 20, 2),
			goroutines(spec.OpCall, path, "bytes", 1, spec.ReceiversPerWriter, 200, 20),
		)
	}
	set.Points = append(set.Points,
		goroutines(spec.OpSend, spec.PathLean, "bytes", 20, spec.ReceiversOne, 100, 2),
		goroutines(spec.OpSend, spec.PathLean, "data", 20, spec.ReceiversOne, 100, 2))
	var progress testWriter
	progress.t = t
	res, err := harness.Run(set, harness.Options{Out: progress, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.RawTCPMsgsPerS <= 0 || res.RawTCPRTTP50Ms <= 0 {
		t.Errorf("raw tcp: %v frames/s, round trip p50 %v ms", res.RawTCPMsgsPerS, res.RawTCPRTTP50Ms)
	}
	if res.DecodeAllocs["bytes"] <= 0 || res.DecodeAllocs["data-vt"] <= 0 {
		t.Errorf("decode allocations %v", res.DecodeAllocs)
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
		if (p.Path == spec.PathPooled || p.Path == spec.PathBridge) && (p.MeanBatch <= 0 || p.RuntimeBytesPerM <= 0) {
			t.Errorf("%s %s without mailroom's figures: mean batch %v, runtime bytes %v", p.Path, p.Op, p.MeanBatch, p.RuntimeBytesPerM)
		}
		if p.Op == spec.OpCall && p.LatP50Ms <= 0 {
			t.Errorf("%s call without latency", p.Path)
		}
		if p.SenderAllocsPerMsg <= 0 || p.ReceiverAllocsPerMsg <= 0 {
			t.Errorf("%s %s %s %s: allocations %v / %v", p.Op, p.Path, p.Payload, p.WriterKind, p.SenderAllocsPerMsg, p.ReceiverAllocsPerMsg)
		}
		if p.PaceMs > 0 && p.ElapsedS < 0.08 {
			t.Errorf("%s paced call finished in %.3fs, faster than its pace allows", p.Path, p.ElapsedS)
		}
	}
	// The targets read 1,000 writers (none here) but for the single
	// caller's round trip against the ping-pong: that one is computed, the
	// others say what they lack.
	for _, tg := range res.Targets {
		if (tg.Missing == "") != (tg.ID == "one-caller-p50-pooled-over-raw-tcp") || (tg.Missing == "" && tg.Measured <= 0) {
			t.Errorf("target %s: %+v", tg.ID, tg)
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
