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
	// PathBridge is protoactor-go's actors, unchanged, over mailroom's
	// remote through the protoactor/bridge module (bridge.StartNode: a
	// mailroom node with its proxy pool under a protoactor ActorSystem).
	// The same writers and counting actors as PathProtoactor: a cast is a
	// send to the counting actor, a call RequestFuture to it.
	PathBridge = "protoactor-bridge"
	// PathLean is a reference, not a runtime: goroutines marshal into one
	// buffer shared under a mutex, one goroutine writes it to one TCP
	// connection; the receiver unmarshals each frame into a fresh message
	// and hands runs of them to one mutex-and-slice mailbox that one
	// consumer drains and counts (package lean). Unpaced sends from
	// goroutine writers to one receiver only.
	PathLean = "lean"
)

// Paths lists every runtime path in its default order (lean is added
// where it applies).
var Paths = []string{PathNative, PathPooled, PathProtoactor, PathBridge}

// Writer kinds: what performs a point's operations on the sender.
const (
	// KindActor: one writer actor per writer, operating from its
	// Receive (its own PID is the sender).
	KindActor = "actor"
	// KindGoroutine: one plain goroutine per writer calling the system's
	// root handle (mailroom System.SendNamed / Cast / Call; protoactor
	// Root.Send / RequestFuture), as an HTTP handler would.
	KindGoroutine = "goroutine"
)

// Receivers: which actor a send (and protoactor's and the bridge's cast
// and call) goes to.
const (
	ReceiversPerWriter = "per-writer" // writer i sends to "r<i>"
	ReceiversOne       = "one"        // every writer sends to "r0"
)

// Spec is one point.
type Spec struct {
	Op         string        `json:"op"`
	Path       string        `json:"path"`
	Payload    string        `json:"payload"`
	Writers    int           `json:"writers"`
	WriterKind string        `json:"writer_kind"`
	Receivers  string        `json:"receivers"`
	Pace       time.Duration `json:"pace"`       // 0: unpaced
	PerWriter  int           `json:"per_writer"` // operations per writer (M)
	Warmup     int           `json:"warmup"`     // unpaced operations per writer before measuring
}

// Paced reports whether writers pause between operations.
func (s Spec) Paced() bool { return s.Pace > 0 }

// Total is the number of measured operations.
func (s Spec) Total() int64 { return int64(s.Writers) * int64(s.PerWriter) }

// OneReceiver reports whether every writer targets the same receiver.
func (s Spec) OneReceiver() bool { return s.Receivers == ReceiversOne }

// ReceiverActors is how many receiving actors the receiver node spawns.
func (s Spec) ReceiverActors() int {
	if s.OneReceiver() {
		return 1
	}
	return s.Writers
}

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
	return fmt.Sprintf("%s/%s/%d/%s/%s/%v", s.Op, s.Payload, s.Writers, s.WriterKind, s.Receivers, s.Pace)
}

// String names the point for progress lines (and -only).
func (s Spec) String() string {
	pace := "unpaced"
	if s.Paced() {
		pace = "pace " + s.Pace.String()
	}
	return fmt.Sprintf("%-4s %-17s %-7s w=%-6d %-9s r=%-10s %s M=%d", s.Op, s.Path, s.Payload, s.Writers, s.WriterKind, s.Receivers, pace, s.PerWriter)
}

// Validate checks a point.
func (s Spec) Validate() error {
	switch {
	case s.Op != OpSend && s.Op != OpCast && s.Op != OpCall:
		return fmt.Errorf("spec: op %q: want send, cast or call", s.Op)
	case s.Path != PathNative && s.Path != PathPooled && s.Path != PathProtoactor && s.Path != PathBridge && s.Path != PathLean:
		return fmt.Errorf("spec: path %q: want native, pooled, protoactor, protoactor-bridge or lean", s.Path)
	case s.WriterKind != KindActor && s.WriterKind != KindGoroutine:
		return fmt.Errorf("spec: %s: writer kind %q: want actor or goroutine", s, s.WriterKind)
	case s.Receivers != ReceiversPerWriter && s.Receivers != ReceiversOne:
		return fmt.Errorf("spec: %s: receivers %q: want per-writer or one", s, s.Receivers)
	case s.Writers < 1 || s.PerWriter < 1 || s.Warmup < 0 || s.Pace < 0:
		return fmt.Errorf("spec: %s: writers, per-writer operations must be positive", s)
	case s.Writers > 1<<20:
		return fmt.Errorf("spec: %d writers: at most %d", s.Writers, 1<<20)
	case s.WriterKind == KindGoroutine && s.Paced():
		return fmt.Errorf("spec: %s: goroutine writers are unpaced only (the timing wheel wakes actors)", s)
	case s.Path == PathLean && (s.Op != OpSend || s.WriterKind != KindGoroutine || !s.OneReceiver() || s.Paced()):
		return fmt.Errorf("spec: %s: the lean reference is unpaced sends from goroutine writers to one receiver", s)
	}
	return nil
}

// WarmupFor is the warm-up used for every path: enough unpaced operations
// per writer that about 20,000 (at least one per writer) cross before
// measuring.
func WarmupFor(writers int) int { return max(1, 20000/writers) }
