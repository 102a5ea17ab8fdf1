package scaletest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
)

// class is how an operation ended.
type class int

const (
	clOK          class = iota
	clNodeDown          // actor.ErrNodeDown: the incarnation that took it went (may have executed)
	clNotSent           // actor.ErrNotSent: still queued when its path died (not executed)
	clUnreachable       // actor.ErrUnreachable: no link to the node (not executed)
	clNoProcess         // actor.ErrNoProcess: no such actor (a PID of a gone incarnation)
	clDraining          // actor.ErrDraining
	clStopped           // actor.ErrStopped: this node is stopping
	clOverloaded        // actor.ErrOverloaded
	clCancelled         // the caller's ctx ended (only the holders have one)
	clOther             // anything else: unexpected, reported
	numClasses
)

var classNames = [numClasses]string{"ok", "node_down", "not_sent", "unreachable", "no_process", "draining", "stopped", "overloaded", "cancelled", "other"}

func (c class) String() string { return classNames[c] }

// classify says which class err is.
func classify(err error) class {
	switch {
	case err == nil:
		return clOK
	case errors.Is(err, actor.ErrNodeDown):
		return clNodeDown
	case errors.Is(err, actor.ErrNotSent):
		return clNotSent
	case errors.Is(err, actor.ErrUnreachable):
		return clUnreachable
	case errors.Is(err, actor.ErrNoProcess):
		return clNoProcess
	case errors.Is(err, actor.ErrDraining):
		return clDraining
	case errors.Is(err, actor.ErrStopped):
		return clStopped
	case errors.Is(err, actor.ErrOverloaded):
		return clOverloaded
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return clCancelled
	}
	return clOther
}

// opKind is what an operation was.
type opKind int

const (
	opCall    opKind = iota // Call of scale_whoami by node name
	opRequest               // Request to the ident actor's PID
	opResolve               // Call of scale_ident, to learn that PID
	opHold                  // Call of scale_hold
	numOpKinds
)

var opNames = [numOpKinds]string{"call", "request", "resolve", "hold"}

func (k opKind) String() string { return opNames[k] }

// targetStats count what a node did to one target.
type targetStats struct {
	ops   [numOpKinds][numClasses]atomic.Int64
	sent  atomic.Int64 // sends handed to the runtime
	wrong atomic.Int64 // answers from an incarnation that must not have answered

	mu   sync.Mutex // protects following
	ends []HoldEnd  // the last holdEnds endings of hold calls
}

// holdEnds is how many hold endings a target keeps (the newest).
const holdEnds = 64

// HoldEnd is when a hold call began and ended, and how.
type HoldEnd struct {
	Start int64  `json:"start"` // unix ms
	End   int64  `json:"end"`
	Class string `json:"class"`
}

func newTargetStats() *targetStats { return &targetStats{} }

func (s *targetStats) count(k opKind, c class) { s.ops[k][c].Add(1) }

func (s *targetStats) holdEnded(start, end int64, c class) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ends) == holdEnds {
		copy(s.ends, s.ends[1:])
		s.ends = s.ends[:holdEnds-1]
	}
	s.ends = append(s.ends, HoldEnd{Start: start, End: end, Class: c.String()})
}

// TargetStats is targetStats as a snapshot carries it.
type TargetStats struct {
	// Ops counts operations by kind ("call", "request", "resolve",
	// "hold") and class ("ok", "node_down", ...); zero counts are left out.
	Ops   map[string]map[string]int64 `json:"ops"`
	Sent  int64                       `json:"sent"`
	Wrong int64                       `json:"wrong_incarnation"`
	Holds []HoldEnd                   `json:"hold_ends,omitempty"`
}

func (s *targetStats) snapshot() TargetStats {
	out := TargetStats{Ops: map[string]map[string]int64{}, Sent: s.sent.Load(), Wrong: s.wrong.Load()}
	for k := range numOpKinds {
		for c := range numClasses {
			if v := s.ops[k][c].Load(); v != 0 {
				m := out.Ops[k.String()]
				if m == nil {
					m = map[string]int64{}
					out.Ops[k.String()] = m
				}
				m[c.String()] = v
			}
		}
	}
	s.mu.Lock()
	out.Holds = append([]HoldEnd(nil), s.ends...)
	s.mu.Unlock()
	return out
}

// Count is the number of operations of kind k that ended as class c
// ("" sums every class).
func (t TargetStats) Count(kind, class string) int64 {
	m := t.Ops[kind]
	if class != "" {
		return m[class]
	}
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// opTable holds the operations in flight, so that one that never ends is
// seen.
type opTable struct {
	mu   sync.Mutex // protects following
	next uint64
	m    map[uint64]liveOp
}

type liveOp struct {
	target string
	kind   opKind
	start  int64 // unix ms
	pinned uint64
}

// Stuck is an operation in flight for longer than a second.
type Stuck struct {
	Target string `json:"target"`
	Kind   string `json:"kind"`
	Start  int64  `json:"start"`            // unix ms
	Pinned string `json:"pinned,omitempty"` // the incarnation a request's PID names
}

// maxStuck bounds the stuck operations a snapshot lists.
const maxStuck = 256

func newOpTable() *opTable { return &opTable{m: map[uint64]liveOp{}} }

func (t *opTable) begin(target string, k opKind, pinned uint64) uint64 {
	now := time.Now().UnixMilli()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	t.m[t.next] = liveOp{target: target, kind: k, start: now, pinned: pinned}
	return t.next
}

func (t *opTable) end(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, id)
}

// snapshot returns how many operations are in flight and those older
// than a second (at most maxStuck of them, and how many more there are).
func (t *opTable) snapshot(now int64) (inflight int, stuck []Stuck, more int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, op := range t.m {
		if now-op.start < 1000 {
			continue
		}
		if len(stuck) == maxStuck {
			more++
			continue
		}
		s := Stuck{Target: op.target, Kind: op.kind.String(), Start: op.start}
		if op.pinned != 0 {
			s.Pinned = hexInc(op.pinned)
		}
		stuck = append(stuck, s)
	}
	return len(t.m), stuck, more
}
