package pacer

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// shards split the ring's lock: writers schedule concurrently.
const shards = 16

// ring is the synchronous core: slot lists indexed by absolute tick
// modulo the ring size. It holds writer indexes, so scheduling allocates
// nothing once slots have grown.
type ring struct {
	slots [][]int32
}

func newRing(n int) ring { return ring{slots: make([][]int32, n)} }

func (r *ring) add(tick int64, id int32) {
	i := int(tick % int64(len(r.slots)))
	r.slots[i] = append(r.slots[i], id)
}

// take appends the ids due at tick to dst and empties the slot.
func (r *ring) take(tick int64, dst []int32) []int32 {
	i := int(tick % int64(len(r.slots)))
	dst = append(dst, r.slots[i]...)
	r.slots[i] = r.slots[i][:0]
	return dst
}

type shard struct {
	mu   sync.Mutex // protects following
	ring ring
	next int64 // first tick not yet taken
}

// Wheel fires ids at their due time, rounded up to the next slot.
type Wheel struct {
	res     time.Duration
	span    int64 // ticks the ring covers
	start   time.Time
	fire    func(id int32)
	shards  [shards]shard
	scratch []int32
}

// New returns a wheel of resolution res able to schedule up to horizon
// ahead; fire is called with each due id from Run's goroutine.
func New(res, horizon time.Duration, fire func(id int32)) (*Wheel, error) {
	if res <= 0 || horizon < res {
		return nil, fmt.Errorf("pacer: resolution %v and horizon %v: want 0 < resolution <= horizon", res, horizon)
	}
	w := &Wheel{res: res, span: int64(horizon/res) + 2, start: time.Now(), fire: fire}
	for i := range w.shards {
		w.shards[i].ring = newRing(int(w.span))
	}
	return w, nil
}

// tickOf is the first tick at or after t.
func (w *Wheel) tickOf(t time.Time) int64 {
	d := t.Sub(w.start)
	if d <= 0 {
		return 0
	}
	return int64((d + w.res - 1) / w.res)
}

// At schedules id to fire at t (at once, on the next slot, if t has
// passed). t must be within the horizon.
func (w *Wheel) At(t time.Time, id int32) {
	tick := w.tickOf(t)
	s := &w.shards[int(id)%shards]
	s.mu.Lock()
	if tick < s.next {
		tick = s.next
	}
	if tick-s.next >= w.span-1 {
		s.mu.Unlock()
		panic(fmt.Sprintf("pacer: %v ahead is beyond the wheel's horizon", time.Until(t)))
	}
	s.ring.add(tick, id)
	s.mu.Unlock()
}

// advance fires every id due up to and including tick.
func (w *Wheel) advance(tick int64) {
	for i := range w.shards {
		s := &w.shards[i]
		s.mu.Lock()
		due := w.scratch[:0]
		for ; s.next <= tick; s.next++ {
			due = s.ring.take(s.next, due)
		}
		s.mu.Unlock()
		for _, id := range due {
			w.fire(id)
		}
		w.scratch = due[:0]
	}
}

// Run drives the wheel until ctx ends.
func (w *Wheel) Run(ctx context.Context) {
	t := time.NewTimer(w.res)
	defer t.Stop()
	for {
		now := w.tickOf(time.Now())
		// tickOf rounds up; what is due is everything strictly before the
		// next boundary, i.e. up to now-1 unless now is exactly on it.
		w.advance(now - 1)
		next := w.start.Add(time.Duration(now) * w.res)
		t.Reset(max(time.Until(next), 50*time.Microsecond))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
