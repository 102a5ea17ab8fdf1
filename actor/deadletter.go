package actor

import (
	"sync"
	"sync/atomic"
)

// DeadLetter is a message that could not be delivered.
type DeadLetter struct {
	To      PID // the intended target (Node only, for a name or function)
	Sender  PID // zero when sent from outside any actor
	Message any
	Reason  error // ErrNoProcess, ErrMailboxFull, ErrUnreachable, ...
}

// deadLetters counts drops and fans them out to subscribers.
type deadLetters struct {
	count atomic.Uint64
	mu    sync.Mutex // protects subs writes
	subs  atomic.Pointer[[]*deadSub]
}

type deadSub struct{ fn func(DeadLetter) }

// DeadLetters is the number of messages dropped since start.
func (s *System) DeadLetters() uint64 { return s.dead.count.Load() }

// SubscribeDeadLetters calls fn for every dead letter, on the goroutine
// that dropped it, possibly concurrently: fn must be quick, safe for
// concurrent use and must not block. The returned function unsubscribes.
func (s *System) SubscribeDeadLetters(fn func(DeadLetter)) (cancel func()) {
	sub := &deadSub{fn: fn}
	d := &s.dead
	d.mu.Lock()
	var cur []*deadSub
	if p := d.subs.Load(); p != nil {
		cur = *p
	}
	next := append(append([]*deadSub(nil), cur...), sub)
	d.subs.Store(&next)
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		cur := *d.subs.Load()
		next := make([]*deadSub, 0, len(cur))
		for _, x := range cur {
			if x != sub {
				next = append(next, x)
			}
		}
		d.subs.Store(&next)
	}
}

// deadLetter records a message that will never be delivered: counted and
// offered to subscribers (actorhooks.DeadLetter, for the transports, which
// drop messages the runtime cannot see).
func (s *System) deadLetter(to, sender PID, msg any, reason error) {
	s.dead.count.Add(1)
	s.counters.dead[deadReason(reason)].Add(1)
	if p := s.dead.subs.Load(); p != nil {
		dl := DeadLetter{To: to, Sender: sender, Message: msg, Reason: reason}
		for _, sub := range *p {
			sub.fn(dl)
		}
	}
}
