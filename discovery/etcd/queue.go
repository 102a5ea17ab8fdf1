package etcd

import (
	"context"
	"sync"

	"github.com/mailroom-go/mailroom/discovery"
)

// eventQueue carries events from the watcher and the renewer to the
// notify goroutine, in order, without blocking the pushers.
type eventQueue struct {
	signal chan struct{} // one slot; fires when items goes from empty to non-empty, or on close

	mu     sync.Mutex // protects following
	items  []discovery.Event
	closed bool
}

func newEventQueue() *eventQueue { return &eventQueue{signal: make(chan struct{}, 1)} }

func (q *eventQueue) push(evs ...discovery.Event) {
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

func (q *eventQueue) run(abort context.Context, notify func(discovery.Event)) {
	for {
		select {
		case <-q.signal:
		case <-abort.Done():
			return
		}
		q.mu.Lock()
		batch, closed := q.items, q.closed
		q.items = nil
		q.mu.Unlock()
		for _, e := range batch {
			if abort.Err() != nil {
				return
			}
			notify(e)
		}
		if closed {
			return
		}
	}
}
