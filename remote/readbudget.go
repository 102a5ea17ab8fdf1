package remote

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The read budget. A frame's header announces its size (up to
// MaxFrameSize) before its body arrives. The reader does not allocate
// the announced size: its buffer grows as bytes arrive, doubling from
// linkAllowance, so a header announcing 64 MiB followed by a trickle
// holds what arrived. What a link's buffer holds beyond linkAllowance is
// taken from the node's read budget (ReadBudgetBytes) before it is
// allocated; it goes back when the frame has been handled. A reader that
// finds the budget spent waits for it, without reading (TCP pushes
// back), and that wait is this node's, not the peer's silence; but it
// waits at most the heartbeat window: then its link closes (several
// half-read frames holding the whole budget would otherwise wait on each
// other for ever). A link keeps its buffer (up to maxKeep) for the next
// frame only while less than half the budget is in use, so idle links
// never hold the budget that frames being read need.

// errReadBudget closes a link whose reader waited the heartbeat window
// for read budget.
var errReadBudget = errors.New("remote: read budget exhausted")

// readBudget is the node-wide budget of frame buffer bytes.
type readBudget struct {
	limit   int64
	used    atomic.Int64
	waiters atomic.Int32

	mu   sync.Mutex    // protects room
	room chan struct{} // closed when bytes are given back; nil if nobody waits
}

func newReadBudget(limit int) *readBudget { return &readBudget{limit: int64(limit)} }

func (b *readBudget) inUse() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// pressed reports whether half the budget is in use: links then give
// their buffers back after each frame.
func (b *readBudget) pressed() bool { return b.used.Load() > b.limit/2 }

func (b *readBudget) tryTake(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// readWait is what a reader waiting for budget needs: its link's close,
// how long it may wait, the flag that tells liveness it waits on this
// node, and the node's counters.
type readWait struct {
	abort    <-chan struct{}
	patience time.Duration
	busy     *atomic.Bool
	waits    *atomic.Uint64
	timeouts *atomic.Uint64
}

// take takes n bytes, waiting at most w.patience for them.
func (b *readBudget) take(n int64, w *readWait) error {
	if b.tryTake(n) {
		return nil
	}
	w.waits.Add(1)
	w.busy.Store(true)
	defer w.busy.Store(false)
	timer := time.NewTimer(w.patience)
	defer timer.Stop()
	for {
		b.mu.Lock()
		b.waiters.Add(1)
		if b.room == nil {
			b.room = make(chan struct{})
		}
		room := b.room
		b.mu.Unlock()
		if b.tryTake(n) { // given back before we were counted
			b.waiters.Add(-1)
			return nil
		}
		select {
		case <-room:
			b.waiters.Add(-1)
			if b.tryTake(n) {
				return nil
			}
		case <-w.abort:
			b.waiters.Add(-1)
			return errLinkClosed
		case <-timer.C:
			b.waiters.Add(-1)
			w.timeouts.Add(1)
			return fmt.Errorf("%w: waited %v for %d bytes (%d of ReadBudgetBytes %d in use)", errReadBudget, w.patience, n, b.used.Load(), b.limit)
		}
	}
}

// give returns n bytes and wakes the waiting readers.
func (b *readBudget) give(n int64) {
	if n == 0 {
		return
	}
	b.used.Add(-n)
	if b.waiters.Load() > 0 {
		b.mu.Lock()
		if b.room != nil {
			close(b.room)
			b.room = nil
		}
		b.mu.Unlock()
	}
}

// linkBudget is the node's read budget as one link's frame reader takes
// it (framereader.go's Budget).
type linkBudget struct {
	rb *readBudget
	w  readWait
}

func (b *linkBudget) Take(n int64) error { return b.rb.take(n, &b.w) }
func (b *linkBudget) Give(n int64)       { b.rb.give(n) }
func (b *linkBudget) Pressed() bool      { return b.rb.pressed() }
