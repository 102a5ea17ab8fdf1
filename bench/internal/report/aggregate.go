package report

import (
	"strconv"
	"strings"

	"github.com/mailroom-go/mailroom/bench/internal/spec"
	"github.com/mailroom-go/mailroom/bench/internal/stats"
)

func itoa(i int) string     { return strconv.Itoa(i) }
func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
func key(p Point) string    { return p.Key() }

// Medians returns, for every point key in order of first appearance, the
// round whose achieved rate is the median of that point's rounds.
func Medians(rounds []Point) []Point {
	var order []string
	by := map[string][]Point{}
	for _, p := range rounds {
		p.normalize()
		k := key(p)
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], p)
	}
	out := make([]Point, 0, len(order))
	for _, k := range order {
		ps := completed(by[k])
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

// completed returns the rounds that completed, or all of them if none
// did (a failed round has no figures; the failures stay in Rounds).
func completed(ps []Point) []Point {
	var ok []Point
	for _, p := range ps {
		if !failed(p) {
			ok = append(ok, p)
		}
	}
	if len(ok) == 0 {
		return ps
	}
	return ok
}

// failed reports whether a round did not complete its phases.
func failed(p Point) bool { return p.AchievedPerS == 0 && strings.HasPrefix(p.Note, "failed") }

// Sel selects the points of one shape on one path. Empty WriterKind and
// Receivers mean writer actors, one receiver per writer (the original
// workload).
type Sel struct {
	Op, Path, Payload string
	Writers           int
	Paced             bool
	WriterKind        string
	Receivers         string
}

// On is s on another path.
func (s Sel) On(path string) Sel { s.Path = path; return s }

func (s Sel) match(p Point) bool {
	kind, recv := s.WriterKind, s.Receivers
	if kind == "" {
		kind = spec.KindActor
	}
	if recv == "" {
		recv = spec.ReceiversPerWriter
	}
	p.normalize()
	return p.Op == s.Op && p.Path == s.Path && p.Payload == s.Payload && p.Writers == s.Writers &&
		(p.PaceMs > 0) == s.Paced && p.WriterKind == kind && p.Receivers == recv
}

// Get returns the point s selects.
func Get(points []Point, s Sel) (Point, bool) {
	for _, p := range points {
		if s.match(p) {
			return p, true
		}
	}
	return Point{}, false
}

// Find returns the point with these coordinates, writer actors with one
// receiver each.
func Find(points []Point, op, path, payload string, writers int, paced bool) (Point, bool) {
	return Get(points, Sel{Op: op, Path: path, Payload: payload, Writers: writers, Paced: paced})
}

// MedianOf is the median of metric over the completed rounds s selects,
// and how many rounds that is (0: none ran).
func MedianOf(rounds []Point, s Sel, metric func(Point) float64) (float64, int) {
	var ps []Point
	for _, p := range rounds {
		if s.match(p) {
			ps = append(ps, p)
		}
	}
	ps = completed(ps)
	if len(ps) == 0 || failed(ps[0]) {
		return 0, 0
	}
	xs := make([]float64, len(ps))
	for i, p := range ps {
		xs[i] = metric(p)
	}
	return stats.Median(xs), len(xs)
}

// ComputeMemory is the paced pooled send sweep's memory per writer.
func ComputeMemory(points []Point) Memory {
	m := Memory{PooledKiBPerWriter: map[string]float64{}, PooledMarginalKiBPerWriter: map[string]float64{}}
	series := pacedSeries(points, "send", "pooled")
	for i, b := range series {
		m.PooledKiBPerWriter[itoa(b.Writers)] = b.KiBPerWriter
		if i == 0 {
			continue
		}
		a := series[i-1]
		grown := (b.SenderRSSMB + b.ReceiverRSSMB) - (a.SenderRSSMB + a.ReceiverRSSMB)
		m.PooledMarginalKiBPerWriter[itoa(a.Writers)+"-"+itoa(b.Writers)] = grown * 1024 / float64(b.Writers-a.Writers)
	}
	return m
}
