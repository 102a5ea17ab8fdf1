package actor

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// envelope is one message in a mailbox.
type envelope struct {
	msg    any
	sender PID
	reply  Replier // non-nil for Request: completes the caller's wait
}

// mailbox is a multi-producer single-consumer queue with two lanes: system
// messages (stop, watch, child bookkeeping), always taken first, and user
// messages. It owns no goroutine: push reports when the queue went from idle
// to having work, and the caller schedules a run; take reports when it went
// idle again. Batches are taken whole, by swapping slices.
//
// A bound, when set, counts user messages not yet processed; the consumer
// reports each processed message with done. Forced pushes (Terminated
// notifications) ignore the bound.
type mailbox struct {
	mu        sync.Mutex // protects following
	sys       []envelope
	user      []envelope
	scheduled bool // a run is scheduled or running
	userHeld  bool // user lane not taken (actor stopping)
	closed    bool
	// taken counts the user messages take handed to the actor since the
	// last sample (sample.go), wrapping; inHand is the size of the batch
	// the actor holds (until it comes back to take), so that a sample
	// sees the backlog of an actor stuck in a long batch.
	taken, inHand uint32
	room          chan struct{} // closed when room appears; nil when nobody waits
	doneCh        chan struct{} // lazily made; closed by close()

	bound   int
	policy  MailboxPolicy
	pending atomic.Int64 // user messages pushed and not yet done (bounded only)
	waiting atomic.Bool  // a sender waits on room
	sysHint atomic.Bool  // the system lane has work

	// consumer-owned spares, swapped in by take
	spareSys, spareUser []envelope
}

// push appends env to the user lane. It returns schedule=true when the
// caller must start a run. Errors: ErrNoProcess when closed, ErrMailboxFull
// for a full FailFast mailbox, ctx's error while blocked (Send passes
// context.Background: it blocks until room or close).
func (m *mailbox) push(ctx context.Context, env envelope, force bool) (schedule bool, err error) {
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return false, ErrNoProcess
		}
		if force || m.bound == 0 || m.pending.Load() < int64(m.bound) {
			break
		}
		if m.policy == FailFast {
			m.mu.Unlock()
			return false, ErrMailboxFull
		}
		// Dekker pairing with done: announce the wait, then look again, so
		// a consumer that made room without seeing the flag is not missed.
		m.waiting.Store(true)
		if m.pending.Load() < int64(m.bound) {
			continue
		}
		if m.room == nil {
			m.room = make(chan struct{})
		}
		room := m.room
		m.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		m.mu.Lock()
	}
	if m.bound > 0 {
		m.pending.Add(1)
	}
	m.user = append(m.user, env)
	schedule = m.kick()
	m.mu.Unlock()
	return schedule, nil
}

// pushRun appends msgs (from senders) to the user lane in order, under one lock while
// they fit (a bounded mailbox takes what fits, then as push: FailFast
// refuses the rest, Block waits for room). It returns how many it queued
// and whether the caller must start a run; err says why the rest were not.
// It returns early, with no error, rather than wait for room after it
// kicked the mailbox: the caller starts the run (which makes the room) and
// calls again with the rest. ctx bounds a wait for room.
func (m *mailbox) pushRun(ctx context.Context, msgs []any, senders []PID) (n int, schedule bool, err error) {
	m.mu.Lock()
	for n < len(msgs) {
		if m.closed {
			m.mu.Unlock()
			return n, schedule, ErrNoProcess
		}
		k := len(msgs) - n
		if m.bound > 0 {
			k = min(k, m.bound-int(m.pending.Load()))
		}
		if k <= 0 {
			if m.policy == FailFast {
				m.mu.Unlock()
				return n, schedule, ErrMailboxFull
			}
			if schedule {
				m.mu.Unlock()
				return n, true, nil
			}
			// As in push: announce the wait, then look again.
			m.waiting.Store(true)
			if m.pending.Load() < int64(m.bound) {
				continue
			}
			if m.room == nil {
				m.room = make(chan struct{})
			}
			room := m.room
			m.mu.Unlock()
			select {
			case <-room:
			case <-ctx.Done():
				return n, schedule, ctx.Err()
			}
			m.mu.Lock()
			continue
		}
		if m.bound > 0 {
			m.pending.Add(int64(k))
		}
		m.user = slices.Grow(m.user, k)
		for i := n; i < n+k; i++ {
			m.user = append(m.user, envelope{msg: msgs[i], sender: senders[i]})
		}
		n += k
		if m.kick() {
			schedule = true
		}
	}
	m.mu.Unlock()
	return n, schedule, nil
}

// pushSys appends to the system lane; never refused unless closed.
func (m *mailbox) pushSys(env envelope) (schedule bool, ok bool) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false, false
	}
	m.sys = append(m.sys, env)
	m.sysHint.Store(true)
	schedule = m.kick()
	m.mu.Unlock()
	return schedule, true
}

// kick marks the mailbox scheduled; it reports whether it was not. Under mu.
func (m *mailbox) kick() bool {
	if m.scheduled {
		return false
	}
	if len(m.sys) == 0 && (m.userHeld || len(m.user) == 0) {
		return false
	}
	m.scheduled = true
	return true
}

// take returns the next batch: the whole system lane if it has anything,
// else the whole user lane (unless held). With nothing to take it clears
// scheduled and returns ok=false: the run must end.
func (m *mailbox) take() (batch []envelope, sys bool, ok bool) {
	m.mu.Lock()
	m.inHand = 0
	switch {
	case len(m.sys) > 0:
		batch, m.sys, m.spareSys = m.sys, m.spareSys[:0], nil
		m.sysHint.Store(false)
		sys = true
	case !m.userHeld && len(m.user) > 0:
		batch, m.user, m.spareUser = m.user, m.spareUser[:0], nil
		m.taken += uint32(len(batch))
		m.inHand = uint32(len(batch))
	default:
		m.scheduled = false
		// Going idle: an idle actor keeps only small buffers.
		if cap(m.spareUser) > idleSpareCap {
			m.spareUser = nil
		}
		if cap(m.spareSys) > idleSpareCap {
			m.spareSys = nil
		}
		m.mu.Unlock()
		return nil, false, false
	}
	m.mu.Unlock()
	return batch, sys, true
}

// takeSys returns the system lane only (between user messages).
func (m *mailbox) takeSys() []envelope {
	if !m.sysHint.Load() {
		return nil
	}
	m.mu.Lock()
	batch := m.sys
	m.sys, m.spareSys = m.spareSys[:0], nil
	m.sysHint.Store(false)
	m.mu.Unlock()
	return batch
}

// idleSpareCap is the largest buffer an idle mailbox keeps.
const idleSpareCap = 8

// recycle keeps a processed batch's storage for the next take; take drops
// large buffers when the mailbox goes idle.
func (m *mailbox) recycle(batch []envelope, sys bool) {
	clear(batch)
	if sys {
		m.spareSys = batch[:0]
	} else {
		m.spareUser = batch[:0]
	}
}

// done reports one user message processed (bounded mailboxes only).
func (m *mailbox) done(n int) {
	if m.bound == 0 {
		return
	}
	m.pending.Add(int64(-n))
	if m.waiting.Load() {
		m.mu.Lock()
		m.wakeLocked()
		m.mu.Unlock()
	}
}

func (m *mailbox) wakeLocked() {
	if m.room != nil {
		close(m.room)
		m.room = nil
	}
	m.waiting.Store(false)
}

// holdUser stops the user lane from being taken and puts rest back at its
// front, in order.
func (m *mailbox) holdUser(rest []envelope) {
	m.mu.Lock()
	m.userHeld = true
	if len(rest) > 0 {
		m.user = append(append(make([]envelope, 0, len(rest)+len(m.user)), rest...), m.user...)
	}
	m.mu.Unlock()
}

// close refuses further pushes and returns what was still queued. Blocked
// senders wake and see ErrNoProcess.
func (m *mailbox) close() (sys, user []envelope) {
	m.mu.Lock()
	m.closed = true
	sys, user = m.sys, m.user
	m.sys, m.user = nil, nil
	m.wakeLocked()
	m.mu.Unlock()
	return sys, user
}

// markDone closes the done channel. Called after close, once the queued
// requests have been answered, so a waiter that sees done can trust that
// an answer, if any, is already in its channel.
func (m *mailbox) markDone() {
	m.mu.Lock()
	if m.doneCh == nil {
		m.doneCh = closedCh
	} else {
		close(m.doneCh)
	}
	m.mu.Unlock()
}

// doneChan returns a channel closed when the mailbox closes (the actor died).
func (m *mailbox) doneChan() <-chan struct{} {
	m.mu.Lock()
	if m.doneCh == nil {
		m.doneCh = make(chan struct{})
	}
	ch := m.doneCh
	m.mu.Unlock()
	return ch
}

// finishInline ends an inline turn (Spawn runs Started on the spawner's
// goroutine while scheduled is held): it reports whether work arrived
// meanwhile and a run must start.
func (m *mailbox) finishInline() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.sys) > 0 || (!m.userHeld && len(m.user) > 0) {
		return true
	}
	m.scheduled = false
	return false
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
