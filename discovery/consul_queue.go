package discovery

import (
	"context"
	"sync"
)

// eventQueue carries events from the watcher and the TTL updater to the
// notify goroutine, in the order they were pushed, without ever blocking
// the pushers.
type eventQueue struct {
	signal chan struct{} // one slot; fires when items goes from empty to non-empty, or on close

	mu     sync.Mutex // protects following
	items  []Event
	closed bool
}

func newEventQueue() *eventQueue { return &eventQueue{signal: make(chan struct{}, 1)} }

// push appends events; after close it drops them.
func (q *eventQueue) push(evs ...Event) {
	if len(evs) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	wasEmpty := len(q.items) == 0
	q.items = append(q.items, evs...)
	if wasEmpty {
		q.wake()
	}
}

// close makes the notify loop exit once it has delivered what is queued.
func (q *eventQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.wake()
}

func (q *eventQueue) wake() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// pop takes the whole batch.
func (q *eventQueue) pop() (batch []Event, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch, q.items = q.items, nil
	return batch, q.closed
}

// run calls notify for every event, one at a time, in order, until the
// queue is closed and drained, or abort is done (Stop ran out of time:
// the rest is dropped).
func (q *eventQueue) run(abort context.Context, notify func(Event)) {
	for {
		select {
		case <-q.signal:
		case <-abort.Done():
			return
		}
		batch, closed := q.pop()
		for _, e := range batch {
			if abort.Err() != nil {
				return
			}
			notify(e)
		}
		if closed {
			// Pushes after close are dropped, so the batch was the last.
			return
		}
	}
}
