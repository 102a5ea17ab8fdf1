package remote

import (
	"sync"
	"sync/atomic"
)

// Admission for inbound work. Every call and cast a peer incarnation
// sends runs on a goroutine (a cast on one of its own, a call on a worker
// that is reused, callworkers.go), so a peer that sends faster than its
// handlers finish (or never reads their replies) could make this node
// spawn and keep without bound. Each peer incarnation has an admission
// shared by all its links, native and pool: at most MaxInflightPerPeer
// calls and casts (and MaxInflightBytesPerPeer of what their payloads
// decode into: an estimate from each type's schema, wire.Codecs.Cost,
// never less than the payload) are in flight. At the bound the reader that has the next one waits before it
// decodes it: it stops reading, the kernel's buffers fill, and TCP pushes
// back on the peer. Nothing is spawned or queued beyond the bound.
//
// A call is in flight from the moment it is admitted until its handler
// has returned and its reply has been handed on: put in the link's
// buffer (which bounds itself, LinkBufferBytes), or written by a proxy
// when it travels through a pool (a reply's Outgoing carries its ticket),
// or dropped and counted. A cast is in flight while its handler runs.
//
// Liveness. A reader waiting for admission is waiting on this node while
// some admitted handler still runs: that is not silence, however long the
// handlers take. But when every admitted call has finished and is only
// waiting to hand its reply to a peer that reads none of them, the wait
// is the peer's: the reader counts as silent, and after the heartbeat
// window liveness closes its link (liveness.go). Closing the links of a
// peer that floods and never reads releases what it held: replies stuck
// on a closed link fall back to another link or are dropped and counted.
// A peer that keeps one link alive with pings and never reads its
// replies keeps, at most, the bound: MaxInflightPerPeer tickets with
// their replies, and no reader of its links reads.

// admission bounds the calls and casts of one peer incarnation running
// here. The counters are atomics: admitting a call costs no lock; a
// waiting reader registers under mu.
type admission struct {
	maxN, maxBytes int64

	n        atomic.Int64 // admitted and not yet released
	bytes    atomic.Int64 // their payload bytes
	replying atomic.Int64 // of n: handler done, handing its reply on
	waiters  atomic.Int32 // readers waiting for room

	mu   sync.Mutex    // protects room
	room chan struct{} // closed when one is released; nil if nobody waits
}

func newAdmission(maxN, maxBytes int) *admission {
	return &admission{maxN: int64(maxN), maxBytes: int64(maxBytes)}
}

// tryAcquire admits one of size bytes if there is room. One is always
// admitted when none is in flight (its size is bounded: a payload of at
// most MaxMessageSize decoding into at most wire.DecodeFactor times that).
func (a *admission) tryAcquire(size int64) bool {
	for {
		n := a.n.Load()
		if n >= a.maxN {
			return false
		}
		if a.n.CompareAndSwap(n, n+1) {
			break
		}
	}
	if b := a.bytes.Add(size); b > a.maxBytes && b != size {
		a.release(size) // over the byte bound: give it back (and wake a waiter it may have missed)
		return false
	}
	return true
}

// acquire admits one of size bytes, waiting for room while abort and gone
// stay open; wait marks the waiting (the link's admitWait, for liveness).
// False when it gave up: the link closed or the incarnation is gone.
func (a *admission) acquire(size int64, abort, gone <-chan struct{}, wait *atomic.Bool, waits *atomic.Uint64) bool {
	if a.tryAcquire(size) {
		return true
	}
	waits.Add(1)
	wait.Store(true)
	defer wait.Store(false)
	for {
		a.mu.Lock()
		a.waiters.Add(1)
		if a.room == nil {
			a.room = make(chan struct{})
		}
		room := a.room
		a.mu.Unlock()
		// A release between the failed try and the registration above saw
		// no waiter and woke nobody: try again now that we are counted.
		if a.tryAcquire(size) {
			a.waiters.Add(-1)
			return true
		}
		select {
		case <-room:
			a.waiters.Add(-1)
			if a.tryAcquire(size) {
				return true
			}
		case <-abort:
			a.waiters.Add(-1)
			return false
		case <-gone:
			a.waiters.Add(-1)
			return false
		}
	}
}

// release gives back one of size bytes and wakes the waiting readers.
func (a *admission) release(size int64) {
	a.bytes.Add(-size)
	a.n.Add(-1)
	if a.waiters.Load() > 0 {
		a.mu.Lock()
		if a.room != nil {
			close(a.room)
			a.room = nil
		}
		a.mu.Unlock()
	}
}

// running reports whether some admitted handler still runs (the others
// only wait to hand their replies on).
func (a *admission) running() bool { return a.n.Load()-a.replying.Load() > 0 }

// inflight is the number admitted now.
func (a *admission) inflight() int64 { return a.n.Load() }

// ticket is one admitted call: its share of its peer's admission, given
// back exactly once, when its reply has been handed on.
type ticket struct {
	a    *admission
	size int64
	rep  atomic.Bool // counted in replying
	done atomic.Bool
}

// replying marks the handler done: the ticket only waits for its reply
// to be handed on now.
func (t *ticket) replying() {
	if t != nil && t.rep.CompareAndSwap(false, true) {
		t.a.replying.Add(1)
	}
}

// release gives the ticket back. Idempotent; nil is a no-op (replies to
// requests and refusals hold none).
func (t *ticket) release() {
	if t == nil || !t.done.CompareAndSwap(false, true) {
		return
	}
	if t.rep.Load() {
		t.a.replying.Add(-1)
	}
	t.a.release(t.size)
}
