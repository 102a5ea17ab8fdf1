package spec

import (
	"fmt"
	"time"
)

// Operations.
const (
	OpSend = "send"
	OpCast = "cast"
	OpCall = "call"
)

// Paths.
const (
	PathNative     = "native"     // mailroom remote, no proxy pool
	PathPooled     = "pooled"     // mailroom with proxypool.Start on both nodes
	PathProtoactor = "protoactor" // protoactor-go remote (gRPC streams)
)

// Paths lists every path in its default order.
var Paths = []string{PathNative, PathPooled, PathProtoactor}

// Spec is one point.
type Spec struct {
	Op        string        `json:"op"`
	Path      string        `json:"path"`
	Payload   string        `json:"payload"`
	Writers   int           `json:"writers"`
	Pace      time.Duration `json:"pace"`       // 0: unpaced
	PerWriter int           `json:"per_writer"` // operations per writer (M)
	Warmup    int           `json:"warmup"`     // unpaced operations per writer before measuring
}

// Paced reports whether writers pause between operations.
func (s Spec) Paced() bool { return s.Pace > 0 }

// Total is the number of measured operations.
func (s Spec) Total() int64 { return int64(s.Writers) * int64(s.PerWriter) }

// IntendedPerS is the rate the workload asks for, N/pace; 0 when unpaced.
func (s Spec) IntendedPerS() float64 {
	if !s.Paced() {
		return 0
	}
	return float64(s.Writers) / s.Pace.Seconds()
}

// Ideal is the time the point takes at the intended rate, M × pace; 0
// when unpaced.
func (s Spec) Ideal() time.Duration { return time.Duration(s.PerWriter) * s.Pace }

// Group is the key shared by points compared side by side (everything
// but the path).
func (s Spec) Group() string {
	return fmt.Sprintf("%s/%s/%d/%v", s.Op, s.Payload, s.Writers, s.Pace)
}

// String names the point for progress lines.
func (s Spec) String() string {
	pace := "unpaced"
	if s.Paced() {
		pace = "pace " + s.Pace.String()
	}
	return fmt.Sprintf("%-4s %-10s %-6s w=%-6d %s M=%d", s.Op, s.Path, s.Payload, s.Writers, pace, s.PerWriter)
}

// Validate checks a point.
func (s Spec) Validate() error {
	switch {
	case s.Op != OpSend && s.Op != OpCast && s.Op != OpCall:
		return fmt.Errorf("spec: op %q: want send, cast or call", s.Op)
	case s.Path != PathNative && s.Path != PathPooled && s.Path != PathProtoactor:
		return fmt.Errorf("spec: path %q: want native, pooled or protoactor", s.Path)
	case s.Writers < 1 || s.PerWriter < 1 || s.Warmup < 0 || s.Pace < 0:
		return fmt.Errorf("spec: %s: writers, per-writer operations must be positive", s)
	case s.Writers > 1<<20:
		return fmt.Errorf("spec: %d writers: at most %d", s.Writers, 1<<20)
	}
	return nil
}

// WarmupFor is the warm-up used for every path: enough unpaced operations
// per writer that about 20,000 (at least one per writer) cross before
// measuring.
func WarmupFor(writers int) int { return max(1, 20000/writers) }
