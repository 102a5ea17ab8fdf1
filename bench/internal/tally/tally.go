package tally

import (
	"sync/atomic"
	"time"
)

// Tally counts operations per writer. Arm, Hit and HitAny may run
// concurrently with each other's readers; Arm must not overlap Hit.
type Tally struct {
	per    []atomic.Int32
	want   atomic.Int32 // per writer
	target atomic.Int64 // total (HitAny)
	full   atomic.Int64 // writers at want
	total  atomic.Int64 // HitAny count
	endNs  atomic.Int64
}

// New returns a tally for writers.
func New(writers int) *Tally { return &Tally{per: make([]atomic.Int32, writers)} }

// Writers is the number of writers counted.
func (t *Tally) Writers() int { return len(t.per) }

// Arm resets every count and expects perWriter operations per writer
// (Hit) or total operations overall (HitAny).
func (t *Tally) Arm(perWriter int, total int64) {
	for i := range t.per {
		t.per[i].Store(0)
	}
	t.full.Store(0)
	t.total.Store(0)
	t.endNs.Store(0)
	t.want.Store(int32(perWriter))
	t.target.Store(total)
}

// Hit counts one operation for writer i.
func (t *Tally) Hit(i int) {
	if t.per[i].Add(1) == t.want.Load() {
		if t.full.Add(1) == int64(len(t.per)) {
			t.endNs.Store(time.Now().UnixNano())
		}
	}
}

// HitAny counts one operation without a writer.
func (t *Tally) HitAny() {
	if t.total.Add(1) == t.target.Load() {
		t.endNs.Store(time.Now().UnixNano())
	}
}

// Snapshot is a reading of a tally.
type Snapshot struct {
	Count int64 `json:"count"` // operations counted
	Full  int64 `json:"full"`  // writers whose count reached the target
	Over  int64 `json:"over"`  // writers counted beyond the target (must be 0)
	EndNs int64 `json:"end_ns"`
}

// Read sums the counts (reads every writer: call it at most a few times
// a second).
func (t *Tally) Read() Snapshot {
	s := Snapshot{Count: t.total.Load(), Full: t.full.Load(), EndNs: t.endNs.Load()}
	want := t.want.Load()
	for i := range t.per {
		c := t.per[i].Load()
		s.Count += int64(c)
		if c > want {
			s.Over++
		}
	}
	return s
}
