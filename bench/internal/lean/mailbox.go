package lean

import "sync"

// Mailbox is the receiver's mailbox: the reader pushes runs of decoded
// messages under one lock, one consumer drains everything at once.
type Mailbox struct {
	limit int           // messages at which Push waits for the consumer
	ready chan struct{} // one slot: signalled when q goes empty -> non-empty

	mu      sync.Mutex // protects following
	q       []any
	closed  bool
	notFull *sync.Cond // Push waits on it while len(q) >= limit
}

// NewMailbox returns a mailbox of at most about limit messages (a Push
// that finds it full waits; one run may take it past the limit).
func NewMailbox(limit int) *Mailbox {
	mb := &Mailbox{limit: limit, ready: make(chan struct{}, 1)}
	mb.notFull = sync.NewCond(&mb.mu)
	return mb
}

// Push appends run (copied) under one lock.
func (mb *Mailbox) Push(run []any) error {
	mb.mu.Lock()
	for len(mb.q) >= mb.limit && !mb.closed {
		mb.notFull.Wait()
	}
	if mb.closed {
		mb.mu.Unlock()
		return ErrClosed
	}
	wasEmpty := len(mb.q) == 0
	mb.q = append(mb.q, run...)
	mb.mu.Unlock()
	if wasEmpty {
		select {
		case mb.ready <- struct{}{}:
		default:
		}
	}
	return nil
}

// Drain waits until the mailbox holds something and returns all of it,
// leaving spare (emptied) in its place; the caller clears the returned
// slice's references before handing it back as a spare. After Close it
// still returns what is left, then false.
func (mb *Mailbox) Drain(spare []any) ([]any, bool) {
	for {
		mb.mu.Lock()
		if len(mb.q) > 0 {
			out := mb.q
			mb.q = spare[:0]
			mb.mu.Unlock()
			mb.notFull.Broadcast()
			return out, true
		}
		if mb.closed {
			mb.mu.Unlock()
			return nil, false
		}
		mb.mu.Unlock()
		<-mb.ready
	}
}

// Close makes every waiting and later Push fail with ErrClosed and Drain
// return false once the mailbox is empty. Idempotent.
func (mb *Mailbox) Close() {
	mb.mu.Lock()
	mb.closed = true
	mb.mu.Unlock()
	mb.notFull.Broadcast()
	select {
	case mb.ready <- struct{}{}:
	default:
	}
}
