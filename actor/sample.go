package actor

import (
	"container/heap"
	"fmt"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/internal/actorstats"
)

// sampler takes mailbox samples for the read side (the observer, the
// metrics) through actorhooks.SampleMailboxes. A sample walks every
// actor, one table shard at a time under its read lock, and each mailbox
// under its own lock, for a moment: the cost is per sample, never per
// message (take counts what it hands out, under the lock it holds
// anyway). Samples are shared: a caller asking within maxAge of the last
// one gets it, so several readers polling at once scan once.
type sampler struct {
	mu   sync.Mutex // protects following; held for a whole pass
	last *actorstats.Sample
	top  int // the top the last sample was taken for
}

// sampleMailboxes returns a sample no older than maxAge holding at least
// the top deepest and busiest actors (actorhooks.SampleMailboxes).
func (s *System) sampleMailboxes(top int, maxAge time.Duration) actorstats.Sample {
	sm := &s.sampler
	sm.mu.Lock()
	defer sm.mu.Unlock()
	now := time.Now()
	if sm.last != nil && sm.top >= top && now.Sub(sm.last.At) <= maxAge {
		return trimSample(*sm.last, top)
	}
	smp := actorstats.Sample{At: now}
	if sm.last != nil {
		smp.Interval = now.Sub(sm.last.At)
	}
	deep, busy := &actorHeap{byDepth: true}, &actorHeap{}
	for i := range s.procs.shards {
		sh := &s.procs.shards[i]
		sh.mu.RLock()
		for _, p := range sh.m {
			depth, taken := p.mb.sample()
			smp.Actors++
			smp.Queued += depth
			smp.Hist[actorstats.Bucket(depth)]++
			if top <= 0 {
				continue
			}
			if depth > 0 {
				deep.offer(top, p, depth, taken)
			}
			if taken > 0 {
				busy.offer(top, p, depth, taken)
			}
		}
		sh.mu.RUnlock()
	}
	smp.Deepest = deep.sorted(smp.Interval)
	smp.Busiest = busy.sorted(smp.Interval)
	sm.last, sm.top = &smp, top
	return smp
}

// trimSample cuts a shared sample's lists to top, copying them: callers
// own what they get.
func trimSample(smp actorstats.Sample, top int) actorstats.Sample {
	smp.Deepest = append([]actorstats.Actor(nil), smp.Deepest[:min(top, len(smp.Deepest))]...)
	smp.Busiest = append([]actorstats.Actor(nil), smp.Busiest[:min(top, len(smp.Busiest))]...)
	return smp
}

// sample reads the mailbox's depth and the messages taken since the last
// sample, and starts the next count. The depth of an unbounded mailbox
// counts the batch in hand whole, the messages of it already handled
// included, until the actor takes again: a stuck actor shows its
// backlog. A bounded one counts exactly (pending).
func (m *mailbox) sample() (depth int, taken uint32) {
	m.mu.Lock()
	depth, taken = len(m.user)+int(m.inHand), m.taken
	m.taken = 0
	m.mu.Unlock()
	if m.bound > 0 {
		depth = int(m.pending.Load())
	}
	return depth, taken
}

// candidate is an actor kept by a sample pass.
type candidate struct {
	p     *process
	depth int
	taken uint32
}

// actorHeap keeps the top candidates of a pass: a min-heap on the key
// (depth or taken), so the smallest kept is the one to replace.
type actorHeap struct {
	byDepth bool
	c       []candidate
}

func (h *actorHeap) key(c candidate) uint64 {
	if h.byDepth {
		return uint64(c.depth)
	}
	return uint64(c.taken)
}

func (h *actorHeap) Len() int           { return len(h.c) }
func (h *actorHeap) Less(i, j int) bool { return h.key(h.c[i]) < h.key(h.c[j]) }
func (h *actorHeap) Swap(i, j int)      { h.c[i], h.c[j] = h.c[j], h.c[i] }
func (h *actorHeap) Push(x any)         { h.c = append(h.c, x.(candidate)) }
func (h *actorHeap) Pop() any {
	x := h.c[len(h.c)-1]
	h.c = h.c[:len(h.c)-1]
	return x
}

func (h *actorHeap) offer(top int, p *process, depth int, taken uint32) {
	c := candidate{p: p, depth: depth, taken: taken}
	if len(h.c) < top {
		heap.Push(h, c)
		return
	}
	if h.key(c) > h.key(h.c[0]) {
		h.c[0] = c
		heap.Fix(h, 0)
	}
}

// sorted empties the heap into a list, largest first. The process fields
// it reads (pid, parent, name, actor) are set before the process enters
// the table and never change.
func (h *actorHeap) sorted(interval time.Duration) []actorstats.Actor {
	out := make([]actorstats.Actor, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		c := heap.Pop(h).(candidate)
		a := actorstats.Actor{
			ID: c.p.pid.ID, Name: c.p.name, Type: fmt.Sprintf("%T", c.p.actor),
			Depth: c.depth, Taken: uint64(c.taken),
		}
		if c.p.parent != nil {
			a.Parent = c.p.parent.pid.ID
		}
		if interval > 0 {
			a.Rate = float64(c.taken) / interval.Seconds()
		}
		out[i] = a
	}
	return out
}
