package spec

import (
	"fmt"
	"time"
)

// Set is a named list of points and how many rounds each group runs.
type Set struct {
	Name string
	// Rounds: how many times each group of points runs (paths
	// interleaved, their order rotated every round); the report keeps the
	// median round per point. Paced groups run once: their rate is set by
	// the pace, not by the machine's mood.
	Rounds int
	Points []Spec
	// RawFrames is how many frames each raw-TCP connection writes.
	RawFrames int
	// RawRTTs is how many round trips the raw-TCP ping-pong measures per
	// round (after as many warm-up round trips as a single caller's
	// warm-up, WarmupFor(1)).
	RawRTTs int
}

// Paced-sweep shape, both sets: each writer does one operation every
// PacedPace, so the intended rate at N writers is N / PacedPace, and M
// operations take M × PacedPace. On this 2-core machine a paced
// operation costs the two processes about 30 µs of CPU (a writer actor's
// activation, the send, the receiver actor's activation; see the
// README), so 2 s puts 100,000 writers (50,000 ops/s) near what the
// machine can do, and 150,000 past it.
const (
	PacedPace = 2 * time.Second
	QuickM    = 4  // 8 s per point
	FullM     = 10 // 20 s per point
)

// unpaced operations per writer at 1,000 writers (quick set).
const (
	quickSendM      = 300   // 300,000 messages
	quickBytesSendM = 1000  // 1,000,000 messages: the workload, 1,000 goroutines x 1,000 sends
	quickCallM      = 60    // 60,000 calls
	quickOneCallerM = 10000 // sequential calls of the single caller
)

// point is a point with writer actors, one receiver per writer.
func point(op, path, payload string, writers int, pace time.Duration, m int) Spec {
	return Spec{Op: op, Path: path, Payload: payload, Writers: writers, WriterKind: KindActor, Receivers: ReceiversPerWriter,
		Pace: pace, PerWriter: m, Warmup: WarmupFor(writers)}
}

// gpoint is an unpaced point with goroutine writers.
func gpoint(op, path, payload string, writers int, receivers string, m int) Spec {
	return Spec{Op: op, Path: path, Payload: payload, Writers: writers, WriterKind: KindGoroutine, Receivers: receivers,
		PerWriter: m, Warmup: WarmupFor(writers)}
}

// withLean is Paths and the lean reference.
func withLean() []string { return append(append([]string(nil), Paths...), PathLean) }

// serviceShaped are the points of issue 13's workload that look like Go
// services, with their operations per writer: goroutine writers through
// the root handle (bytes to one receiver and to one per writer; data to
// one receiver, beside the lean reference), the data payload generated
// with vtprotobuf (writer actors), calls from goroutines, and the single
// caller.
func serviceShaped(sendM, bytesM, callM, oneCallerM int) []Spec {
	var out []Spec
	for _, path := range Paths {
		out = append(out, point(OpSend, path, "data-vt", 1000, 0, sendM))
	}
	for _, path := range withLean() {
		out = append(out, gpoint(OpSend, path, "bytes", 1000, ReceiversOne, bytesM))
	}
	for _, path := range Paths {
		out = append(out, gpoint(OpSend, path, "bytes", 1000, ReceiversPerWriter, bytesM))
	}
	for _, path := range withLean() {
		out = append(out, gpoint(OpSend, path, "data", 1000, ReceiversOne, sendM))
	}
	for _, path := range Paths {
		out = append(out, gpoint(OpCall, path, "data", 1000, ReceiversPerWriter, callM))
	}
	for _, path := range Paths {
		out = append(out, gpoint(OpCall, path, "bytes", 1, ReceiversPerWriter, oneCallerM))
	}
	return out
}

// Quick is `make bench-quick`: every point issue 13's targets need.
// Unpaced send and call at 1,000 writer actors on every path (data; send
// also data-vt), the service-shaped goroutine points with the lean
// reference, the single caller, and the paced send sweep for native and
// pooled.
func Quick() Set {
	s := Set{Name: "quick", Rounds: 3, RawFrames: 4_000_000, RawRTTs: quickOneCallerM}
	for _, path := range Paths {
		s.Points = append(s.Points, point(OpSend, path, "data", 1000, 0, quickSendM))
	}
	for _, path := range Paths {
		s.Points = append(s.Points, point(OpCall, path, "data", 1000, 0, quickCallM))
	}
	s.Points = append(s.Points, serviceShaped(quickSendM, quickBytesSendM, quickCallM, quickOneCallerM)...)
	for _, n := range []int{1000, 10000, 50000, 100000} {
		for _, path := range []string{PathNative, PathPooled} {
			s.Points = append(s.Points, point(OpSend, path, "data", n, PacedPace, QuickM))
		}
	}
	return s
}

// Full is `make bench`: unpaced send and call at 1,000 writer actors on
// every payload and path, unpaced cast with the data payload, the
// service-shaped points (as in Quick, more operations); the paced send
// sweep (1,000 to 150,000 writers) on every path, and paced cast and
// call at 10,000 and 100,000 writers on every path.
func Full() Set {
	s := Set{Name: "full", Rounds: 2, RawFrames: 8_000_000, RawRTTs: 20000}
	perWriter := map[string]map[string]int{ // unpaced M at 1,000 writers
		OpSend: {"tiny": 1000, "data": 1000, "1KiB": 500, "100KiB": 10},
		OpCast: {"data": 500},
		OpCall: {"tiny": 200, "data": 200, "1KiB": 150, "100KiB": 10},
	}
	for _, op := range []string{OpSend, OpCast, OpCall} {
		for _, payload := range []string{"tiny", "data", "1KiB", "100KiB"} {
			m, ok := perWriter[op][payload]
			if !ok {
				continue
			}
			for _, path := range Paths {
				s.Points = append(s.Points, point(op, path, payload, 1000, 0, m))
			}
		}
	}
	s.Points = append(s.Points, serviceShaped(1000, 2000, 200, 20000)...)
	for _, n := range []int{1000, 10000, 50000, 100000, 150000} {
		for _, path := range Paths {
			s.Points = append(s.Points, point(OpSend, path, "data", n, PacedPace, FullM))
		}
	}
	for _, op := range []string{OpCast, OpCall} {
		for _, n := range []int{10000, 100000} {
			for _, path := range Paths {
				s.Points = append(s.Points, point(op, path, "data", n, PacedPace, FullM))
			}
		}
	}
	return s
}

// ByName returns the set called name.
func ByName(name string) (Set, error) {
	switch name {
	case "quick":
		return Quick(), nil
	case "full":
		return Full(), nil
	}
	return Set{}, fmt.Errorf("spec: no set %q (want quick or full)", name)
}

// Schedule is one run of one point: which round it belongs to.
type Schedule struct {
	Spec  Spec
	Round int
}

// Order returns the runs of s in the order they run: group by group
// (first appearance), round by round, paths rotated each round.
func (s Set) Order() []Schedule {
	var groups []string
	byGroup := map[string][]Spec{}
	for _, p := range s.Points {
		g := p.Group()
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], p)
	}
	var out []Schedule
	for _, g := range groups {
		pts := byGroup[g]
		rounds := s.Rounds
		if pts[0].Paced() || rounds < 1 {
			rounds = 1
		}
		for r := range rounds {
			for i := range pts {
				out = append(out, Schedule{Spec: pts[(i+r)%len(pts)], Round: r})
			}
		}
	}
	return out
}
