package remote

import (
	"sync"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
)

// budget bounds the bytes waiting in one proxy (its mailbox counts
// messages; payloads vary from bytes to megabytes). Block makes a sender
// wait for room; otherwise a full budget is actor.ErrOverloaded.
type budget struct {
	limit int64

	mu     sync.Mutex // protects following
	used   int64
	room   chan struct{} // closed when room appears; nil when nobody waits
	closed bool
}

func newBudget(limit int) *budget { return &budget{limit: int64(limit)} }

// acquire takes n bytes. force ignores the limit (replies must not wait:
// two nodes with full proxies would otherwise wait on each other).
func (b *budget) acquire(n int, block, force bool) error {
	b.mu.Lock()
	for {
		if b.closed {
			b.mu.Unlock()
			return errPathClosed
		}
		// A message larger than the limit still goes when the queue is empty.
		if force || b.used == 0 || b.used+int64(n) <= b.limit {
			b.used += int64(n)
			b.mu.Unlock()
			return nil
		}
		if !block {
			b.mu.Unlock()
			return actor.ErrOverloaded
		}
		if b.room == nil {
			b.room = make(chan struct{})
		}
		room := b.room
		b.mu.Unlock()
		<-room
		b.mu.Lock()
	}
}

func (b *budget) release(n int) {
	b.mu.Lock()
	b.used -= int64(n)
	if b.room != nil {
		close(b.room)
		b.room = nil
	}
	b.mu.Unlock()
}

// close wakes every waiter: the pool is gone.
func (b *budget) close() {
	b.mu.Lock()
	b.closed = true
	if b.room != nil {
		close(b.room)
		b.room = nil
	}
	b.mu.Unlock()
}

// Bytes are what is queued now.
func (b *budget) bytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// held tracks one Outgoing's bytes, and the admission ticket of the call
// a reply answers (admission.go), so they are released exactly once.
type held struct {
	b    *budget
	t    *ticket
	n    int32 // an entry's size (at most MaxFrameSize: 1 GiB); int32 keeps Outgoing in its size class
	done atomic.Bool
}

func (h *held) release() {
	if h == nil || (h.b == nil && h.t == nil) || !h.done.CompareAndSwap(false, true) {
		return
	}
	if h.b != nil {
		h.b.release(int(h.n))
	}
	h.t.release()
}
