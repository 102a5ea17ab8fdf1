package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom-go/mailroom/bench/internal/spec"
)

func sample() *Result {
	pt := func(op, path string, writers int, pace, rate float64, round int) Point {
		p := Point{Op: op, Path: path, Payload: "data", Writers: writers, WriterKind: "actor", Receivers: "per-writer", PaceMs: pace, Round: round, Rounds: 1,
			PerWriter: 5, Ops: int64(writers * 5), AchievedPerS: rate, ElapsedS: 1, SenderRSSMB: 40, ReceiverRSSMB: 30,
			CPUSPerMillion: 7, WireBytesPerMsg: 260, KiBPerWriter: 1.5, SenderAllocsPerMsg: 3, ReceiverAllocsPerMsg: 12}
		if pace > 0 {
			p.IntendedPerS = float64(writers) / (pace / 1000)
			p.AchievedFrac = rate / p.IntendedPerS
			p.IdealS = 10
		}
		if path == "pooled" || path == spec.PathBridge {
			p.MeanBatch, p.BatchHist = 12, []uint64{1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 4}
		}
		return p
	}
	// bytes, goroutine writers, one receiver: rate, CPU s/M, allocs
	gb := func(path string, rate, cpu, sa, ra float64, round int) Point {
		p := pt("send", path, 1000, 0, rate, round)
		p.Payload, p.WriterKind, p.Receivers = "bytes", "goroutine", "one"
		p.CPUSPerMillion, p.SenderAllocsPerMsg, p.ReceiverAllocsPerMsg = cpu, sa, ra
		return p
	}
	with := func(p Point, f func(*Point)) Point { f(&p); return p }
	vt := func(p *Point) { p.Payload = "data-vt" }
	gor := func(p *Point) { p.WriterKind = "goroutine" }
	one := func(path string, p50 float64, round int) Point {
		p := pt("call", path, 1, 0, 15000, round)
		p.Payload, p.WriterKind, p.LatP50Ms, p.LatP99Ms = "bytes", "goroutine", p50, 2*p50
		return p
	}
	rounds := []Point{
		pt("send", "native", 1000, 0, 170000, 0), pt("send", "pooled", 1000, 0, 250000, 0), pt("send", "protoactor", 1000, 0, 100000, 0),
		pt("send", "native", 1000, 0, 150000, 1), pt("send", "pooled", 1000, 0, 300000, 1), pt("send", "protoactor", 1000, 0, 90000, 1),
		pt("send", "pooled", 1000, 0, 200000, 2),
		with(pt("send", "pooled", 1000, 0, 330000, 0), vt), with(pt("send", "protoactor", 1000, 0, 100000, 0), vt),
		gb("pooled", 1.0e6, 2.0, 0.5, 3.5, 0), gb("pooled", 1.2e6, 1.8, 0.7, 2.5, 1), gb("pooled", 0.8e6, 2.2, 0.9, 2.9, 2),
		gb("lean", 3.0e6, 0.5, 0.01, 2.01, 0), gb("lean", 3.0e6, 0.5, 0.01, 2.01, 1),
		gb("protoactor", 0.4e6, 6.0, 9, 20, 0),
		pt("call", "native", 1000, 0, 40000, 0), pt("call", "pooled", 1000, 0, 50000, 0), pt("call", "protoactor", 1000, 0, 10000, 0),
		with(pt("call", "pooled", 1000, 0, 60000, 0), gor), with(pt("call", "protoactor", 1000, 0, 30000, 0), gor),
		one("pooled", 0.070, 0), one("pooled", 0.066, 1), one("pooled", 0.090, 2), one("protoactor", 0.1, 0),
		pt("send", "native", 100000, 2000, 30000, 0), pt("send", "pooled", 100000, 2000, 48000, 0),
		pt("send", "native", 10000, 2000, 5000, 0), pt("send", "pooled", 10000, 2000, 4990, 0),
		// protoactor-bridge: protoactor-go's actors over mailroom
		pt("send", spec.PathBridge, 1000, 0, 160000, 0), pt("call", spec.PathBridge, 1000, 0, 25000, 0),
		gb(spec.PathBridge, 0.6e6, 3.0, 5, 8, 0), one(spec.PathBridge, 0.080, 0),
		pt("send", spec.PathBridge, 100000, 2000, 47000, 0),
	}
	res := &Result{Name: "test", Command: "make bench-quick", Machine: Machine{CPU: "cpu <x>", Cores: 2}, RawTCPMsgsPerS: 1e6, RawTCPRTTP50Ms: 0.060,
		RawTCP: Raw{FrameBytes: 259, WriteBytes: 65 << 10, MsgsPerS: map[string]float64{"1": 1e6, "2": 1.5e6}, UnbatchedMsgsPerS: map[string]float64{"1": 2e5, "2": 3e5}, Rounds: 2,
			CallFrameBytes: 250, ReplyFrameBytes: 30, RTTs: 1000, RTTP50Ms: 0.060, RTTP99Ms: 0.1},
		DecodeAllocs: map[string]int{"bytes": 2, "data": 10},
		Rounds:       rounds}
	Finish(res)
	return res
}

func TestMediansPickTheMedianRound(t *testing.T) {
	res := sample()
	p, ok := Find(res.Points, "send", "pooled", "data", 1000, false)
	if !ok || p.AchievedPerS != 250000 || p.Rounds != 3 {
		t.Fatalf("pooled send median %+v", p)
	}
	if len(res.Points) != 24 {
		t.Fatalf("%d median points, want 24", len(res.Points))
	}
	if p, ok := Get(res.Points, SelSendBytes.On("pooled")); !ok || p.AchievedPerS != 1.0e6 {
		t.Fatalf("goroutine bytes pooled median %+v", p)
	}
}

func TestMediansSkipFailedRounds(t *testing.T) {
	ok := Point{Op: "send", Path: "pooled", Payload: "100KiB", Writers: 1000, AchievedPerS: 3800}
	bad := ok
	bad.AchievedPerS, bad.Note, bad.Round = 0, "failed: warm-up did not complete", 1
	got := Medians([]Point{bad, ok})
	if len(got) != 1 || got[0].AchievedPerS != 3800 {
		t.Fatalf("%+v", got)
	}
	if got := Medians([]Point{bad}); len(got) != 1 || got[0].Note == "" {
		t.Fatalf("an all-failed point must stay, failed: %+v", got)
	}
}

func TestTargets(t *testing.T) {
	res := sample()
	by := map[string]Target{}
	for _, tg := range res.Targets {
		by[tg.ID] = tg
	}
	near := func(a, b float64) bool { return a > b-1e-9 && a < b+1e-9 }
	want := []struct {
		id       string
		measured float64
		met      bool
	}{
		// medians of rounds: pooled 1.0M (of 0.8, 1.0, 1.2), lean 3.0M
		{"send-bytes-pooled-over-lean", 1.0 / 3, false},
		{"send-bytes-pooled-over-protoactor", 2.5, true}, // the goal itself is met
		{"send-data-pooled-over-protoactor", 250000.0 / 95000, true},
		{"send-data-vt-pooled-over-protoactor", 3.3, true},
		{"call-data-pooled-over-protoactor", 5, true},
		{"call-data-goroutines-pooled-over-protoactor", 2, false},
		{"one-caller-p50-pooled-over-raw-tcp", 0.070 / 0.060, false}, // 1.167 > 1.15
		{"cpu-send-bytes-pooled-over-protoactor", 2.0 / 6, true},
		{"sender-allocs-per-pooled-send", 0.7, true},
		{"receiver-allocs-per-pooled-send", 2.9, true}, // goal 2 + 1
		{"paced-send-100000-pooled", 0.96, true},
	}
	if len(res.Targets) != len(want) {
		t.Fatalf("%d targets, want %d: %+v", len(res.Targets), len(want), res.Targets)
	}
	for _, w := range want {
		tg, ok := by[w.id]
		if !ok {
			t.Errorf("no target %s", w.id)
			continue
		}
		if !near(tg.Measured, w.measured) || tg.Met != w.met || tg.Missing != "" || tg.Detail == "" {
			t.Errorf("%s: measured %v met %v (%s), want %v met %v", w.id, tg.Measured, tg.Met, tg.Missing, w.measured, w.met)
		}
	}
	if c := by["send-bytes-pooled-over-lean"].CPUImplied; !near(c, 0.5/2.0) {
		t.Errorf("CPU-implied ratio %v, want lean's 0.5 s/M over pooled's 2.0", c)
	}
	if by["one-caller-p50-pooled-over-raw-tcp"].CPUImplied != 0 || by["cpu-send-bytes-pooled-over-protoactor"].CPUImplied != 0 {
		t.Error("a CPU-implied ratio on a target that is not a ratio of rates")
	}
	if g := by["receiver-allocs-per-pooled-send"].Goal; g != 3 {
		t.Errorf("receiver allocation goal %v, want the decoded message's 2 + 1", g)
	}
	m := res.Memory
	if m.PooledKiBPerWriter["10000"] != 1.5 || len(m.PooledMarginalKiBPerWriter) != 1 {
		t.Fatalf("memory per writer %+v", m)
	}
}

// TestTargetsWithoutTheirPointsSaySo: a target whose point did not run
// is not met, and says which point it lacks.
func TestTargetsWithoutTheirPointsSaySo(t *testing.T) {
	res := &Result{Rounds: []Point{{Op: "send", Path: "pooled", Payload: "data", Writers: 1000, AchievedPerS: 1}}}
	Finish(res)
	for _, tg := range res.Targets {
		if tg.Met || tg.Missing == "" || tg.Measured != 0 {
			t.Errorf("%s: %+v", tg.ID, tg)
		}
	}
}

// TestTheSetsHoldEveryTargetsPoint: quick and full run every point a
// target reads.
func TestTheSetsHoldEveryTargetsPoint(t *testing.T) {
	for _, set := range []spec.Set{spec.Quick(), spec.Full()} {
		var pts []Point
		for _, s := range set.Points {
			pts = append(pts, Point{Op: s.Op, Path: s.Path, Payload: s.Payload, Writers: s.Writers, WriterKind: s.WriterKind, Receivers: s.Receivers, PaceMs: float64(s.Pace) / 1e6})
		}
		for _, sel := range TargetPoints() {
			if _, ok := Get(pts, sel); !ok {
				t.Errorf("%s lacks %s on %s", set.Name, describe(sel), sel.Path)
			}
		}
		if set.RawRTTs <= 0 {
			t.Errorf("%s has no raw TCP ping-pong", set.Name)
		}
	}
}

func TestReadJSONOfAResultBeforeIssue13(t *testing.T) {
	old := `{"name":"full","targets":{"send_pooled_over_protoactor":1.46},"points":[{"op":"send","path":"pooled","payload":"data","writers":1000,"achieved_per_s":5}],
	"rounds":[{"op":"send","path":"pooled","payload":"data","writers":1000,"achieved_per_s":5}]}`
	path := filepath.Join(t.TempDir(), "old.json")
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Targets) != 0 || res.Points[0].WriterKind != "actor" || res.Rounds[0].Receivers != "per-writer" {
		t.Fatalf("%+v", res)
	}
	Finish(res)
	if _, ok := Find(res.Points, "send", "pooled", "data", 1000, false); !ok {
		t.Fatal("an old point is not found as writer actors with one receiver each")
	}
}

// TestJSONShape pins the fields the report and external checks read.
func TestJSONShape(t *testing.T) {
	b, err := json.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	if _, ok := top["raw_tcp_msgs_per_s"].(float64); !ok {
		t.Fatalf("raw_tcp_msgs_per_s is not a number: %v", top["raw_tcp_msgs_per_s"])
	}
	points, ok := top["points"].([]any)
	if !ok || len(points) == 0 {
		t.Fatal("no points list")
	}
	numbers := []string{"writers", "pace_ms", "intended_per_s", "achieved_per_s", "elapsed_s", "sender_rss_mb",
		"receiver_rss_mb", "cpu_s_per_million", "wire_bytes_per_msg", "mean_batch", "errors", "sender_allocs_per_msg", "receiver_allocs_per_msg"}
	var single bool
	for _, raw := range points {
		p := raw.(map[string]any)
		if p["op"] == "call" && p["writers"] == 1.0 && p["writer_kind"] == "goroutine" && p["payload"] == "bytes" {
			_, single = p["lat_p50_ms"].(float64)
		}
		if k := p["writer_kind"]; k != "actor" && k != "goroutine" {
			t.Errorf("writer_kind %v", k)
		}
		for _, k := range []string{"op", "path", "payload", "writer_kind", "receivers"} {
			if _, ok := p[k].(string); !ok {
				t.Errorf("point field %q is not a string: %v", k, p[k])
			}
		}
		for _, k := range numbers {
			if _, ok := p[k].(float64); !ok {
				t.Errorf("point field %q is not a number: %v", k, p[k])
			}
		}
	}
	if !single {
		t.Error("no single-caller point (op=call, writers=1, writer_kind=goroutine, payload=bytes) with lat_p50_ms")
	}
	if v, ok := top["raw_tcp_rtt_p50_ms"].(float64); !ok || v <= 0 {
		t.Errorf("raw_tcp_rtt_p50_ms: %v", top["raw_tcp_rtt_p50_ms"])
	}
	targets, ok := top["targets"].([]any)
	if !ok || len(targets) == 0 {
		t.Fatalf("targets is not a list: %v", top["targets"])
	}
	for _, raw := range targets {
		tg := raw.(map[string]any)
		_, okM := tg["measured"].(float64)
		_, okG := tg["goal"].(float64)
		_, okB := tg["met"].(bool)
		if _, okN := tg["name"].(string); !okM || !okG || !okB || !okN {
			t.Errorf("target %v lacks name, measured, goal or met", tg)
		}
	}
}

func TestWriteAllAndReadBack(t *testing.T) {
	dir := t.TempDir()
	res := sample()
	files, err := WriteAll(res, dir)
	if err != nil {
		t.Fatal(err)
	}
	var svgs int
	for _, f := range files {
		if strings.HasSuffix(f, ".svg") {
			svgs++
			b, _ := os.ReadFile(f)
			d := xml.NewDecoder(bytes.NewReader(b))
			for {
				if _, err := d.Token(); err != nil {
					if err.Error() != "EOF" {
						t.Fatalf("%s: %v", f, err)
					}
					break
				}
			}
		}
	}
	if svgs != 4 { // paced send rate and CPU, unpaced rate and CPU
		t.Errorf("%d plots, want 4: %v", svgs, files)
	}
	back, err := ReadJSON(filepath.Join(dir, "test.json"))
	if err != nil || len(back.Points) != len(res.Points) {
		t.Fatalf("read back: %v", err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "test.md"))
	for _, want := range []string{"## Targets", "## Unpaced send", "## One caller", "## Paced send", "## Resources per point", "## Batch sizes",
		"| 100,000 | 50,000 |", "1.60×", "![paced send", "| lean |", "| bytes | 1,000 | goroutines | one |", "0.33×", "| raw TCP ping-pong | 1,000 | 60.0 |", "| missed |", "≤ 1.15×",
		// the bridge: its column and what it gains over protoactor-go
		"| protoactor | protoactor-bridge | lean | pooled / native | pooled / protoactor | bridge / protoactor | pooled / lean |",
		"| bytes | 1,000 | goroutines | one | – | 1,000,000 | 400,000 | 600,000 | 3,000,000 | – | 2.50× | 1.50× | 0.33× |",
		"| data | 1,000 | actors | per-writer | 40,000 | 50,000 | 10,000 | 25,000 | 1.25× | 5.00× | 2.50× |",
		"| protoactor-bridge | 5 | 80.0 | 160.0 | 1.33× |",
		"| pooled/s | protoactor/s | protoactor-bridge/s |", "| 100,000 | 50,000 | 30,000 | 48,000 | – | 47,000 | 1.60× | 96.0 % |",
		"| send | protoactor-bridge | data | 1,000 | 0 | 12.0 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.HasSuffix(f, ".svg") && !strings.Contains(string(b), ">protoactor-bridge</text>") {
			t.Errorf("%s: no protoactor-bridge in the legend", f)
		}
	}
}

func TestSplice(t *testing.T) {
	doc := "# Title\n\nintro\n\n" + BeginMarker + "\nold\n" + EndMarker + "\n\nafter\n"
	out, err := splice(doc, sample(), nil, "results/")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "old") || !strings.Contains(out, "\n### Targets") || !strings.HasSuffix(out, EndMarker+"\n\nafter\n") {
		t.Fatalf("splice:\n%s", out)
	}
	if _, err := splice("no markers", sample(), nil, ""); err == nil {
		t.Fatal("missing markers accepted")
	}
}
