package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sample() *Result {
	pt := func(op, path string, writers int, pace, rate float64, round int) Point {
		p := Point{Op: op, Path: path, Payload: "data", Writers: writers, PaceMs: pace, Round: round, Rounds: 1,
			PerWriter: 5, Ops: int64(writers * 5), AchievedPerS: rate, ElapsedS: 1, SenderRSSMB: 40, ReceiverRSSMB: 30,
			CPUSPerMillion: 7, WireBytesPerMsg: 260, KiBPerWriter: 1.5}
		if pace > 0 {
			p.IntendedPerS = float64(writers) / (pace / 1000)
			p.AchievedFrac = rate / p.IntendedPerS
			p.IdealS = 10
		}
		if path == "pooled" {
			p.MeanBatch, p.BatchHist = 12, []uint64{1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 4}
		}
		return p
	}
	rounds := []Point{
		pt("send", "native", 1000, 0, 170000, 0), pt("send", "pooled", 1000, 0, 250000, 0), pt("send", "protoactor", 1000, 0, 100000, 0),
		pt("send", "native", 1000, 0, 150000, 1), pt("send", "pooled", 1000, 0, 300000, 1), pt("send", "protoactor", 1000, 0, 90000, 1),
		pt("send", "pooled", 1000, 0, 200000, 2),
		pt("call", "native", 1000, 0, 40000, 0), pt("call", "pooled", 1000, 0, 50000, 0), pt("call", "protoactor", 1000, 0, 10000, 0),
		pt("send", "native", 100000, 2000, 30000, 0), pt("send", "pooled", 100000, 2000, 48000, 0),
		pt("send", "native", 10000, 2000, 5000, 0), pt("send", "pooled", 10000, 2000, 4990, 0),
	}
	res := &Result{Name: "test", Command: "make bench-quick", Machine: Machine{CPU: "cpu <x>", Cores: 2}, RawTCPMsgsPerS: 1e6,
		RawTCP: Raw{FrameBytes: 259, WriteBytes: 65 << 10, MsgsPerS: map[string]float64{"1": 1e6, "2": 1.5e6}, UnbatchedMsgsPerS: map[string]float64{"1": 2e5, "2": 3e5}, Rounds: 2},
		Rounds: rounds, Notes: Notes()}
	res.Points = Medians(rounds)
	res.Targets = ComputeTargets(res.Points, res.RawTCPMsgsPerS)
	return res
}

func TestMediansPickTheMedianRound(t *testing.T) {
	res := sample()
	p, ok := Find(res.Points, "send", "pooled", "data", 1000, false)
	if !ok || p.AchievedPerS != 250000 || p.Rounds != 3 {
		t.Fatalf("pooled send median %+v", p)
	}
	if len(res.Points) != 10 {
		t.Fatalf("%d median points, want 10", len(res.Points))
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
	tg := sample().Targets
	near := func(a, b float64) bool { return a > b-1e-9 && a < b+1e-9 }
	if !near(tg.SendPooledOverProtoactor, 250000.0/90000) || !near(tg.SendPooledOverRawTCP, 0.25) || !near(tg.CallPooledOverProtoactor, 5) {
		t.Fatalf("%+v", tg)
	}
	if tg.PacedWriters != 100000 || !near(tg.PacedPooledOverNative, 1.6) || !near(tg.PacedPooledFraction, 0.96) {
		t.Fatalf("%+v", tg)
	}
	if tg.PooledKiBPerWriter["10000"] != 1.5 {
		t.Fatalf("memory per writer %+v", tg.PooledKiBPerWriter)
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
		"receiver_rss_mb", "cpu_s_per_million", "wire_bytes_per_msg", "mean_batch", "errors"}
	for _, raw := range points {
		p := raw.(map[string]any)
		for _, k := range []string{"op", "path", "payload"} {
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
	for _, want := range []string{"## Targets", "## Unpaced send", "## Paced send", "## Resources per point", "## Batch sizes", "| 100,000 | 50,000 |", "1.60×", "![paced send"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown lacks %q", want)
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
