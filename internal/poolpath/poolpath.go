package poolpath

import (
	"context"
	"math/bits"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
)

// Host is the remote layer as the pooled path sees it: one node.
type Host interface {
	// DialPool dials a pool link to worker of node's incarnation inc: it
	// is authenticated, paired with that worker, and registered with the
	// incarnation (heartbeats, liveness, fences, replies read on it). It
	// writes nothing but heartbeats and pongs until its pool is published
	// and the pool's fence has passed. It fails, wrapping
	// actor.ErrUnreachable, if inc is not node's current incarnation, the
	// peer refuses (its pool disabled, worker out of range, incarnation
	// changed), or ctx ends.
	DialPool(ctx context.Context, node string, inc uint64, worker int) (Link, error)

	// Publish makes proxies (with opts.Links, one each, from DialPool,
	// all of inc, in the same order) the pool for node's incarnation inc.
	// From its return, sends, casts, calls and requests to node go
	// through it, sharded by the caller's identity, and replies to calls
	// from inc may. A pool published earlier for node is unpublished
	// (fenced, as by Unpublish). It fails if inc is not current, a link
	// reaches another incarnation (counted in Stats.GuardViolations), or
	// the node is stopping.
	Publish(node string, inc uint64, proxies []actor.PID, opts Options) (Pool, error)

	// Unpublish takes pool out of routing, if it is routed, and fails the
	// calls and requests pushed into it: still queued with
	// actor.ErrNotSent, written with actor.ErrNodeDown. While its peer
	// incarnation lives, the pool's links are fenced in the same step.
	// What the pool's queues hold stays for their owners to write and
	// Finish, or drop. Idempotent; never waits.
	Unpublish(pool Pool, reason error)

	// Route is the pool published for node, or nil.
	Route(node string) Pool

	// Stats are the pooled-path counters for node, summed over every pool
	// built toward it (created on first use; forgotten with the node).
	Stats(node string) *Stats
}

// Options describe a published pool's proxies and bound their queues.
type Options struct {
	// Links are the proxies' pool links, in the order of the proxies:
	// messages sharded to proxy i are queued on Links[i], which proxy i
	// drains (Link.OnQueued, Flush). Required; each must come from the
	// Host's DialPool.
	Links []Link
	// QueueEntries bounds the messages waiting in each proxy (queued or
	// being written); 0 is unbounded.
	QueueEntries int
	// QueueBytes bounds the encoded bytes waiting in each proxy; 0 is
	// unbounded. A single message larger than it still goes through an
	// empty queue.
	QueueBytes int
	// BatchSize caps the messages in one batch frame; 0 is no cap but
	// MaxFrameSize.
	BatchSize int
	// FailFast makes a full proxy refuse with actor.ErrOverloaded instead
	// of making the sender wait.
	FailFast bool
	// Dropped is called, on the goroutine that drops it, for each send
	// or cast ("send", "cast") a link's queue dropped (Link.DropQueued):
	// the pooled path turns it into a dead letter. Calls and requests
	// are failed by Unpublish, replies rerouted.
	Dropped func(op string, reason error)
}

// Pool is a published pool.
type Pool interface {
	// Node is the peer node's name; Incarnation the incarnation it serves.
	Node() string
	Incarnation() uint64
	// Proxies are the proxy actors, by worker index.
	Proxies() []actor.PID
	// QueueDepth is the messages waiting in the pool's proxies now
	// (queued, not yet taken for a write).
	QueueDepth() int
	// QueuedBytes is the encoded bytes waiting in the pool's proxies now,
	// the batches being written included.
	QueuedBytes() int64
	// Closed reports whether the pool has been unpublished.
	Closed() bool
}

// Link is one pool link and the queue its proxy drains: a connection to
// one worker of a peer incarnation's receiver pool. Its proxy writes its
// batches; the link's own goroutines read it (replies, pongs, fences) and
// write its heartbeats and pongs.
type Link interface {
	// OnQueued sets the function that wakes the link's owner when a
	// message is queued on an idle queue. Set it before publishing.
	OnQueued(wake func())
	// Flush writes every batch waiting in the queue, one frame each, and
	// returns when the kernel has them; more reports that others arrived
	// meanwhile. The first Flush of a published link waits for its pool's
	// fence. A write error closes the link: what it had not written is
	// dropped (DropQueued's rules) and the error returned.
	Flush() (more bool, err error)
	// Finish ends the link after its owner's last batch: nothing more is
	// written, the link is half-closed and keeps reading until the peer
	// closes its side, so that what it carried arrives.
	Finish()
	// DropQueued closes the queue to new messages and accounts for what
	// it still holds: replies rerouted to another live link of the
	// caller's incarnation, calls and requests left to the pool's
	// teardown, sends and casts given to Options.Dropped.
	DropQueued(reason error)
	// Close ends the link at once.
	Close(reason error)
	// Closed is closed when the link has closed; Err then says why.
	Closed() <-chan struct{}
	Err() error
	// Worker is the peer worker the link is paired with; Incarnation the
	// peer incarnation it reaches.
	Worker() int
	Incarnation() uint64
	// QueueLen is the messages waiting in its queue.
	QueueLen() int
	// SetHold sets a function called before each batch write (tests).
	SetHold(f func())
}

// Stats are the pooled-path counters for one peer node, summed over
// every pool built toward it.
type Stats struct {
	Batches         atomic.Uint64 // batch frames written
	Messages        atomic.Uint64 // entries written
	Bytes           atomic.Uint64 // bytes written
	Replies         atomic.Uint64 // replies that went through the pool
	GuardViolations atomic.Uint64 // entries for another incarnation (must stay 0)
	// Hist counts batches by size: bucket i holds sizes in (2^(i-1), 2^i],
	// bucket 0 size 1, the last bucket everything above 2^(len-2).
	Hist [12]atomic.Uint64
}

// Observe counts one batch of entries written in bytes.
func (s *Stats) Observe(entries, bytes int) {
	s.Batches.Add(1)
	s.Messages.Add(uint64(entries))
	s.Bytes.Add(uint64(bytes))
	b := 0
	if entries > 1 {
		b = bits.Len(uint(entries - 1))
	}
	if b >= len(s.Hist) {
		b = len(s.Hist) - 1
	}
	s.Hist[b].Add(1)
}

// MeanBatch is messages per batch.
func (s *Stats) MeanBatch() float64 {
	b := s.Batches.Load()
	if b == 0 {
		return 0
	}
	return float64(s.Messages.Load()) / float64(b)
}
