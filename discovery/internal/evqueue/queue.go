package evqueue

import (
	"context"
	"sync"
)

// Queue carries values from any number of pushers to one Run loop, in
// the order they were pushed, without ever blocking the pushers.
type Queue[T any] struct {
	signal chan struct{} // one slot; fires when items goes from empty to non-empty, or on close

	mu     sync.Mutex // protects following
	items  []T
	closed bool
}

// New returns an empty, open queue.
func New[T any]() *Queue[T] { return &Queue[T]{signal: make(chan struct{}, 1)} }

// Push appends vs; after Close it drops them.
func (q *Queue[T]) Push(vs ...T) {
	if len(vs) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	wasEmpty := len(q.items) == 0
	q.items = append(q.items, vs...)
	if wasEmpty {
		q.wake()
	}
}

// Close makes Run return once it has delivered what is queued.
// Idempotent.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.wake()
}

func (q *Queue[T]) wake() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// pop takes the whole batch.
func (q *Queue[T]) pop() (batch []T, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch, q.items = q.items, nil
	return batch, q.closed
}

// Run calls deliver for every value, one at a time, in order, on the
// calling goroutine, until the queue is closed and drained, or abort is
// done (Stop ran out of time: the rest is dropped). Run once.
func (q *Queue[T]) Run(abort context.Context, deliver func(T)) {
	for {
		select {
		case <-q.signal:
		case <-abort.Done():
			return
		}
		batch, closed := q.pop()
		for _, v := range batch {
			if abort.Err() != nil {
				return
			}
			deliver(v)
		}
		if closed {
			// Pushes after Close are dropped, so the batch was the last.
			return
		}
	}
}
