package actor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// scheduler runs every timer of one System: a binary min-heap of
// deadlines under one lock, and at most one Clock.AfterFunc pending, for
// the earliest. A pending timer is a heap entry (timer, 96 bytes) and
// nothing else: no goroutine, no runtime timer of its own. When the
// armed callback runs it takes every timer that is due, re-arms for the
// next deadline and delivers what it took after the lock: an actor's
// timer is pushed into that actor's mailbox (forced past its bound, so
// the callback never waits; a repeating timer has at most one tick
// queued, so this is bounded by the actor's own timers), and a
// System.SendAfter goes to a sender goroutine that lives only while such
// sends wait (a Send may block: a bounded Block mailbox, a link being
// dialed), so that no send holds up the other timers.
//
// Deadlines are nanoseconds on the System's Clock since base. Timers due
// at the same time fire in the order they were started.
type scheduler struct {
	sys   *System
	clock Clock
	base  time.Time

	mu      sync.Mutex // protects following, each timer's when, idx, seq, prev and next, and procExt.timers
	heap    []*timer
	seq     uint64      // start order, for timers due at the same time
	armed   bool        // an AfterFunc is pending, for armedAt
	armedAt int64       //
	armGen  uint64      // identifies the pending AfterFunc's callback
	stopArm func() bool // stops the pending AfterFunc
	closed  bool        // System.Stop is done with timers: none fires again
	outq    []*timer    // due System.SendAfter timers, for the sender goroutine
	outRun  bool        // the sender goroutine runs

	// wg counts the armed callbacks not yet run or stopped and the sender
	// goroutine: close waits for them.
	wg sync.WaitGroup
}

// timer is one pending timer. Its state is atomic so that Stop can come
// from any goroutine; its place in the heap and in its actor's list is
// the scheduler's, under its lock.
type timer struct {
	when  int64 // deadline (scheduler time); guarded by scheduler.mu
	idx   int32 // index in the heap, -1 when not in it; guarded
	state atomic.Uint32
	seq   uint64 // guarded
	// period is SendEvery's interval; cron a schedule's; both nil or 0:
	// a one-shot timer.
	period int64
	cron   *cronSchedule
	proc   *process // the actor the timer belongs to; nil for System.SendAfter
	msg    any      // what is delivered (a *sysSend for System.SendAfter)
	key    any      // for a keyed timer (tKeyed)
	// prev and next link the owner's timers (procExt.timers); guarded.
	prev, next *timer
}

// Timer state bits.
const (
	tStopped uint32 = 1 << iota // stopped, or a one-shot delivered: nothing more is delivered
	tQueued                     // a repeating timer's tick waits in the mailbox
	tKeyed                      // started by key: key is meaningful
	tLinked                     // on its owner's list
)

// sysSend is what a System.SendAfter timer sends.
type sysSend struct {
	to  PID
	msg any
}

func (t *timer) repeats() bool { return t.period != 0 || t.cron != nil }

// markStopped sets tStopped; false if it was already set.
func (t *timer) markStopped() bool {
	for {
		s := t.state.Load()
		if s&tStopped != 0 {
			return false
		}
		if t.state.CompareAndSwap(s, s|tStopped) {
			return true
		}
	}
}

// markQueued sets tQueued; false if a tick is queued already or the
// timer is stopped.
func (t *timer) markQueued() bool {
	for {
		s := t.state.Load()
		if s&(tStopped|tQueued) != 0 {
			return false
		}
		if t.state.CompareAndSwap(s, s|tQueued) {
			return true
		}
	}
}

// clearQueued clears tQueued and returns the state it left.
func (t *timer) clearQueued() uint32 { return t.state.And(^tQueued) &^ tQueued }

func (sc *scheduler) init(s *System) {
	sc.sys, sc.clock, sc.base = s, s.cfg.Clock, s.cfg.Clock.Now()
}

// now is the scheduler time: the clock's, in nanoseconds since base.
func (sc *scheduler) now() int64 { return int64(sc.clock.Now().Sub(sc.base)) }

// start adds t, due at when. A closed scheduler stops it instead: it
// never fires.
func (sc *scheduler) start(t *timer, when int64) {
	sc.mu.Lock()
	if sc.closed {
		sc.mu.Unlock()
		t.state.Store(tStopped)
		return
	}
	t.when = when
	sc.seq++
	t.seq = sc.seq
	sc.push(t)
	if p := t.proc; p != nil {
		x := p.ext
		t.next = x.timers
		if x.timers != nil {
			x.timers.prev = t
		}
		x.timers = t
		t.state.Or(tLinked)
	}
	sc.armLocked()
	sc.mu.Unlock()
}

// stop stops t: it is never delivered after this, unless a delivery had
// already begun on another goroutine. False if it was stopped already
// (or, for a one-shot timer, delivered).
func (sc *scheduler) stop(t *timer) bool {
	if !t.markStopped() {
		return false
	}
	sc.mu.Lock()
	sc.detach(t)
	sc.mu.Unlock()
	return true
}

// detach takes t out of the heap and its owner's list. Under mu.
func (sc *scheduler) detach(t *timer) {
	if t.idx >= 0 {
		sc.remove(int(t.idx))
	}
	sc.unlink(t)
}

// unlink takes t off its owner's list. Under mu.
func (sc *scheduler) unlink(t *timer) {
	if t.state.Load()&tLinked == 0 {
		return
	}
	t.state.And(^tLinked)
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		t.proc.ext.timers = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	}
	t.prev, t.next = nil, nil
}

// cancelOwned stops every timer of the actor x belongs to (it ended).
func (sc *scheduler) cancelOwned(x *procExt) {
	sc.mu.Lock()
	for t := x.timers; t != nil; {
		next := t.next
		t.markStopped()
		if t.idx >= 0 {
			sc.remove(int(t.idx))
		}
		t.state.And(^tLinked)
		t.prev, t.next = nil, nil
		t = next
	}
	x.timers = nil
	sc.mu.Unlock()
}

// armLocked makes sure an AfterFunc is pending for the earliest
// deadline. Under mu. The clock's AfterFunc never calls back before it
// returns (Clock), so calling it here cannot deadlock.
func (sc *scheduler) armLocked() {
	if len(sc.heap) == 0 || sc.closed {
		return
	}
	first := sc.heap[0].when
	if sc.armed {
		if sc.armedAt <= first {
			return
		}
		if sc.stopArm() {
			sc.wg.Done() // its callback will not run
		}
	}
	sc.armGen++
	gen := sc.armGen
	sc.wg.Add(1)
	sc.armed, sc.armedAt = true, first
	sc.stopArm = sc.clock.AfterFunc(time.Duration(max(0, first-sc.now())), func() { sc.fire(gen) })
}

// fire is the armed callback: it takes what is due, re-arms, and
// delivers. A callback that was replaced but could not be stopped runs
// too: it finds what is due, if anything, like the current one.
func (sc *scheduler) fire(gen uint64) {
	defer sc.wg.Done()
	var buf [16]*timer
	due := buf[:0]
	sc.mu.Lock()
	if sc.closed {
		sc.mu.Unlock()
		return
	}
	if gen == sc.armGen {
		sc.armed = false
	}
	now := sc.now()
	for len(sc.heap) > 0 && sc.heap[0].when <= now {
		t := sc.heap[0]
		if next, ok := sc.nextDeadline(t, now); ok {
			t.when = next
			sc.down(0)
		} else {
			sc.remove(0)
			if t.proc != nil {
				sc.unlink(t)
			}
		}
		due = append(due, t)
	}
	sc.armLocked()
	sc.mu.Unlock()
	var sends bool
	for _, t := range due {
		if t.proc != nil {
			t.deliver()
		} else {
			sends = true
		}
	}
	if sends {
		sc.queueSends(due)
	}
}

// nextDeadline is a repeating timer's next deadline after now; false
// for a one-shot timer, or a schedule with no next time.
func (sc *scheduler) nextDeadline(t *timer, now int64) (int64, bool) {
	switch {
	case t.period != 0:
		next := t.when + t.period
		if next <= now { // late (a stalled clock or a slow callback): skip the missed ticks
			next += ((now-next)/t.period + 1) * t.period
		}
		return next, true
	case t.cron != nil:
		return sc.cronNext(t.cron, now)
	}
	return 0, false
}

// cronNext is the first time after now that s names; false if none.
func (sc *scheduler) cronNext(s *cronSchedule, now int64) (int64, bool) {
	next := s.s.Next(sc.base.Add(time.Duration(now)))
	if next.IsZero() {
		return 0, false
	}
	return max(int64(next.Sub(sc.base)), now+1), true
}

// deliver pushes an actor timer's message into its mailbox. The actor
// checks again when it takes it (process.timerMessage): a timer stopped
// meanwhile delivers nothing.
func (t *timer) deliver() {
	if t.repeats() {
		if !t.markQueued() {
			return // stopped, or the last tick is still waiting: no backlog
		}
	} else if t.state.Load()&tStopped != 0 {
		return
	}
	p := t.proc
	// A closed mailbox is an actor that ended: its end stopped its timers.
	sched, _ := p.mb.push(context.Background(), envelope{msg: t}, true)
	if sched {
		p.sys.runners.start(p)
	}
}

// queueSends hands the due System.SendAfter timers among due to the
// sender goroutine, starting it if it is not running.
func (sc *scheduler) queueSends(due []*timer) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, t := range due {
		if t.proc == nil {
			sc.outq = append(sc.outq, t)
		}
	}
	if !sc.outRun {
		sc.outRun = true
		sc.wg.Add(1)
		go sc.runSends()
	}
}

// runSends sends what System.SendAfter timers left, in order, until there
// is nothing left.
func (sc *scheduler) runSends() {
	defer sc.wg.Done()
	for {
		sc.mu.Lock()
		q := sc.outq
		sc.outq = nil
		if len(q) == 0 {
			sc.outRun = false
			sc.mu.Unlock()
			return
		}
		sc.mu.Unlock()
		for _, t := range q {
			if t.markStopped() {
				m := t.msg.(*sysSend)
				sc.sys.send(context.Background(), PID{}, m.to, m.msg)
			}
		}
	}
}

// close ends the scheduler (System.Stop, once the actors are gone):
// nothing fires after it returns. A System.SendAfter still pending is a
// dead letter (ErrStopped); it waits for a callback or the sender
// goroutine still running.
func (sc *scheduler) close() {
	sc.mu.Lock()
	sc.closed = true
	if sc.armed && sc.stopArm() {
		sc.wg.Done()
	}
	sc.armed = false
	var dropped []*sysSend
	for _, t := range sc.heap {
		t.idx = -1
		if t.markStopped() && t.proc == nil {
			dropped = append(dropped, t.msg.(*sysSend))
		}
	}
	clear(sc.heap)
	sc.heap = nil
	sc.mu.Unlock()
	for _, m := range dropped {
		sc.sys.deadLetter(m.to, PID{}, m.msg, fmt.Errorf("timer pending when the node stopped: %w", ErrStopped))
	}
	sc.wg.Wait()
}

// pending is the number of timers in the heap.
func (sc *scheduler) pending() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.heap)
}

// The heap: a binary min-heap on (when, seq). Under mu.

func (sc *scheduler) less(i, j int) bool {
	a, b := sc.heap[i], sc.heap[j]
	return a.when < b.when || a.when == b.when && a.seq < b.seq
}

func (sc *scheduler) swap(i, j int) {
	h := sc.heap
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = int32(i), int32(j)
}

func (sc *scheduler) push(t *timer) {
	t.idx = int32(len(sc.heap))
	sc.heap = append(sc.heap, t)
	sc.up(len(sc.heap) - 1)
}

func (sc *scheduler) remove(i int) {
	last := len(sc.heap) - 1
	t := sc.heap[i]
	if i != last {
		sc.swap(i, last)
	}
	sc.heap[last] = nil
	sc.heap = sc.heap[:last]
	t.idx = -1
	if i != last {
		sc.down(i)
		sc.up(i)
	}
	if cap(sc.heap) > 1024 && len(sc.heap) < cap(sc.heap)/4 {
		sc.heap = append([]*timer(nil), sc.heap...) // give back what a burst of timers took
	}
}

func (sc *scheduler) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !sc.less(i, parent) {
			return
		}
		sc.swap(i, parent)
		i = parent
	}
}

func (sc *scheduler) down(i int) {
	n := len(sc.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && sc.less(r, l) {
			m = r
		}
		if !sc.less(m, i) {
			return
		}
		sc.swap(i, m)
		i = m
	}
}
