package report

import (
	"strconv"
	"strings"

	"github.com/mailroom-go/mailroom/bench/internal/stats"
)

func itoa(i int) string     { return strconv.Itoa(i) }
func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
func key(p Point) string    { return p.Key() }
func pct(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Medians returns, for every point key in order of first appearance, the
// round whose achieved rate is the median of that point's rounds.
func Medians(rounds []Point) []Point {
	var order []string
	by := map[string][]Point{}
	for _, p := range rounds {
		k := key(p)
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], p)
	}
	out := make([]Point, 0, len(order))
	for _, k := range order {
		ps := by[k]
		// A failed round has no figures: the median is of the rounds
		// that completed, if any did (the failures stay in Rounds).
		var ok []Point
		for _, p := range ps {
			if !failed(p) {
				ok = append(ok, p)
			}
		}
		if len(ok) > 0 && len(ok) < len(ps) {
			ps = ok
		}
		rates := make([]float64, len(ps))
		for i, p := range ps {
			rates[i] = p.AchievedPerS
		}
		m := ps[stats.MedianIndex(rates)]
		m.Rounds = len(ps)
		out = append(out, m)
	}
	return out
}

// failed reports whether a round did not complete its phases.
func failed(p Point) bool { return p.AchievedPerS == 0 && strings.HasPrefix(p.Note, "failed") }

// Find returns the point with these coordinates.
func Find(points []Point, op, path, payload string, writers int, paced bool) (Point, bool) {
	for _, p := range points {
		if p.Op == op && p.Path == path && p.Payload == payload && p.Writers == writers && (p.PaceMs > 0) == paced {
			return p, true
		}
	}
	return Point{}, false
}

// ComputeTargets fills the ratios from the median points.
func ComputeTargets(points []Point, rawMsgsPerS float64) Targets {
	var t Targets
	rate := func(op, path string, writers int, paced bool) float64 {
		p, _ := Find(points, op, path, "data", writers, paced)
		return p.AchievedPerS
	}
	t.SendPooledOverProtoactor = pct(rate("send", "pooled", 1000, false), rate("send", "protoactor", 1000, false))
	t.SendPooledOverRawTCP = pct(rate("send", "pooled", 1000, false), rawMsgsPerS)
	t.CallPooledOverProtoactor = pct(rate("call", "pooled", 1000, false), rate("call", "protoactor", 1000, false))
	t.PooledKiBPerWriter = map[string]float64{}
	for _, p := range points {
		if p.Op != "send" || p.Payload != "data" || p.PaceMs == 0 {
			continue
		}
		if p.Path == "pooled" {
			t.PooledKiBPerWriter[itoa(p.Writers)] = p.KiBPerWriter
		}
		// The target is at 100,000 writers; without that point,
		// the most writers measured on both paths.
		_, okN := Find(points, "send", "native", "data", p.Writers, true)
		_, okP := Find(points, "send", "pooled", "data", p.Writers, true)
		if okN && okP && t.PacedWriters != 100000 && (p.Writers == 100000 || p.Writers > t.PacedWriters) {
			t.PacedWriters = p.Writers
		}
	}
	t.PooledMarginalKiBPerWriter = map[string]float64{}
	series := pacedSeries(points, "send", "pooled")
	for i := 1; i < len(series); i++ {
		a, b := series[i-1], series[i]
		grown := (b.SenderRSSMB + b.ReceiverRSSMB) - (a.SenderRSSMB + a.ReceiverRSSMB)
		t.PooledMarginalKiBPerWriter[itoa(a.Writers)+"-"+itoa(b.Writers)] = grown * 1024 / float64(b.Writers-a.Writers)
	}
	if n := t.PacedWriters; n > 0 {
		pooled, _ := Find(points, "send", "pooled", "data", n, true)
		native, _ := Find(points, "send", "native", "data", n, true)
		t.PacedPooledFraction = pooled.AchievedFrac
		t.PacedNativeFraction = native.AchievedFrac
		t.PacedPooledOverNative = pct(pooled.AchievedPerS, native.AchievedPerS)
	}
	return t
}
