package remote

import (
	"encoding/binary"
	"slices"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/wire"
)

// A proxy's queue. Callers append their messages, already encoded as
// batch entries, to the batch being built: one lock and one copy per
// message, no allocation (the batches' buffers are recycled). The proxy
// takes every batch waiting with one lock, and each batch is written as
// one frame from the buffer it was built in: its header goes in the room
// reserved at the front. So a message costs its encoding, one copy and
// one uncontended-as-possible lock; the proxy's wake-up, its lock and its
// write are paid once per batch.
//
// The queue is bounded in entries and in bytes, counted from the push
// until the batch holding them is written (or dropped): a Block queue
// makes the caller wait for room, a FailFast one refuses with
// actor.ErrOverloaded. Replies are forced in (they must not wait: two
// nodes with full queues would wait on each other); their volume is
// bounded by the calls in flight.

// hdrRoom is the room reserved at the front of a batch's buffer for its
// frame header: length, kind, and the entry count as a uvarint.
const hdrRoom = wire.FrameHeader + 1 + binary.MaxVarintLen64

// batchBuf is one batch being built or written: the reserved header
// room, then the entries.
type batchBuf struct {
	b     []byte
	n     int          // entries in b
	calls []queuedCall // the call and request entries, in order
	// tickets are the admission tickets of the replies in it (admission.go):
	// given back when the batch is written or dropped.
	tickets []*ticket
	// held is what the batch counts against the queue's bounds: fixed at
	// push time, so dropping an abandoned call does not change it.
	heldN     int
	heldBytes int64
}

// queuedCall is a call or request entry: its offset in the batch and the
// call, which is claimed (marked sent) just before the batch is written.
type queuedCall struct {
	off int
	pc  *pendingCall
}

// entries is the body of the batch: what follows the header room.
func (bb *batchBuf) entries() []byte { return bb.b[hdrRoom:] }

// frame fills the header in front of the entries and returns the whole
// frame.
func (bb *batchBuf) frame() []byte {
	var cnt [binary.MaxVarintLen64]byte
	c := binary.PutUvarint(cnt[:], uint64(bb.n))
	start := hdrRoom - wire.FrameHeader - 1 - c
	wire.PutU32(bb.b[start:], uint32(len(bb.b)-start-wire.FrameHeader))
	bb.b[start+wire.FrameHeader] = byte(wire.KindBatch)
	copy(bb.b[start+wire.FrameHeader+1:], cnt[:c])
	return bb.b[start:]
}

// entryEnd is the offset just past the entry at off (kind, u32 length,
// body: its own encoding says where it ends).
func entryEnd(b []byte, off int) int { return off + 5 + int(wire.GetU32(b[off+1:])) }

// cut removes the entries of the calls abandoned while they waited (they
// were answered "not sent" and must never run), keeping the others in
// order.
func (bb *batchBuf) cut(abandoned []int) {
	w := abandoned[0]
	r := entryEnd(bb.b, w)
	for _, off := range abandoned[1:] {
		w += copy(bb.b[w:], bb.b[r:off])
		r = entryEnd(bb.b, off)
	}
	w += copy(bb.b[w:], bb.b[r:])
	bb.b = bb.b[:w]
	bb.n -= len(abandoned)
}

// queueOptions bound a proxy queue.
type queueOptions struct {
	entries  int   // entries held at most; 0 unbounded
	bytes    int64 // bytes held at most; 0 unbounded
	batch    int   // entries per batch frame; 0 no cap
	maxBody  int   // bytes of entries per frame (from MaxFrameSize)
	failFast bool
}

// proxyQueue is the queue of one proxy (one pool link).
type proxyQueue struct {
	opts queueOptions
	wake func() // tells the proxy there is work; called outside mu

	mu        sync.Mutex  // protects following
	batches   []*batchBuf // waiting, oldest first; the last is being built
	queued    int         // entries waiting (not taken)
	heldN     int         // entries waiting or being written
	heldBytes int64
	scheduled bool          // a turn is owned (the proxy's, or a caller's writing) and has not found the queue empty since
	shut      bool          // refuses new entries (its pool is gone)
	room      chan struct{} // closed when room appears; nil when nobody waits
	spare     []*batchBuf   // recycled buffers
	lately    int           // bytes of the largest batch of the last take
	turns     uint64        // takes so far
	swept     uint64        // turns at the last sweep
}

// A queue recycles its batches' buffers (as many as it held at its peak,
// within the queue's bounds), and a batch that outgrows its buffer leaves
// the smaller one to the spares rather than to the GC. A queue that
// stayed idle through a whole sweep (the node's liveness loop, every
// second) keeps its two largest within 64 KiB in all: a turn writes one
// batch while the next fills another. (Trimming at every idle moment
// made a queue of calls, idle between waves of replies, allocate a
// buffer and grow it on almost every turn: 500 bytes per call.)
const (
	maxSpare      = 64
	maxSpareBytes = 1 << 20
	idleSpares    = 2
	idleSpareCap  = 64 << 10
)

// push appends one encoded entry (pc set for a call or request). force
// ignores the bounds. errPathClosed once the queue is shut.
func (q *proxyQueue) push(entry []byte, pc *pendingCall, force bool) error {
	_, err := q.pushWith(entry, pc, force, nil, false)
	return err
}

// pushWith is push with the admission ticket of the call a reply answers,
// held until the batch holding the reply is written or dropped. With
// mayWrite, a push into an idle queue does not wake the proxy: it
// reports own, and the caller owns the turn (it writes, see
// PoolLink.flushOwned).
func (q *proxyQueue) pushWith(entry []byte, pc *pendingCall, force bool, t *ticket, mayWrite bool) (own bool, err error) {
	q.mu.Lock()
	for {
		if q.shut {
			q.mu.Unlock()
			return false, errPathClosed
		}
		if force || q.fits(len(entry)) {
			break
		}
		if q.opts.failFast {
			q.mu.Unlock()
			return false, actor.ErrOverloaded
		}
		if q.room == nil {
			q.room = make(chan struct{})
		}
		room := q.room
		q.mu.Unlock()
		<-room
		q.mu.Lock()
	}
	bb := q.open(len(entry))
	if pc != nil {
		bb.calls = append(bb.calls, queuedCall{off: len(bb.b), pc: pc})
	}
	if t != nil {
		bb.tickets = append(bb.tickets, t)
	}
	if need := len(bb.b) + len(entry); need > cap(bb.b) {
		q.grow(bb, need)
	}
	bb.b = append(bb.b, entry...)
	bb.n++
	bb.heldN++
	bb.heldBytes += int64(len(entry))
	q.queued++
	q.heldN++
	q.heldBytes += int64(len(entry))
	wake := !q.scheduled
	q.scheduled = true
	q.mu.Unlock()
	switch {
	case wake && mayWrite:
		return true, nil
	case wake:
		q.wake()
	}
	return false, nil
}

// fits reports whether n more bytes are within the bounds. A message
// larger than the byte bound still goes through an empty queue. Under mu.
func (q *proxyQueue) fits(n int) bool {
	if q.opts.entries > 0 && q.heldN >= q.opts.entries {
		return false
	}
	return q.opts.bytes == 0 || q.heldBytes == 0 || q.heldBytes+int64(n) <= q.opts.bytes
}

// open returns the batch an entry of n bytes goes into: the last one,
// unless it is full in entries or would outgrow a frame. Under mu.
func (q *proxyQueue) open(n int) *batchBuf {
	if k := len(q.batches); k > 0 {
		bb := q.batches[k-1]
		if (q.opts.batch == 0 || bb.n < q.opts.batch) && len(bb.b)-hdrRoom+n <= q.opts.maxBody {
			return bb
		}
	}
	var bb *batchBuf
	if k := len(q.spare); k > 0 {
		// The largest: batches lately were as large as the largest, and a
		// buffer that grows leaves garbage.
		j := k - 1
		for i := range k - 1 {
			if cap(q.spare[i].b) > cap(q.spare[j].b) {
				j = i
			}
		}
		bb = q.spare[j]
		q.spare[j] = q.spare[k-1]
		q.spare[k-1] = nil
		q.spare = q.spare[:k-1]
	} else {
		// As large as the batches lately taken (calls come in batches of
		// tens, a send flood in full ones), so that a buffer rarely grows.
		size := min(max(q.lately, 16*n, 4<<10), maxSpareBytes, q.opts.maxBody)
		bb = &batchBuf{b: make([]byte, hdrRoom, hdrRoom+max(size, n))}
	}
	q.batches = append(q.batches, bb)
	return bb
}

// grow gives bb a buffer of at least need bytes, and its old one to the
// spares. Under mu.
func (q *proxyQueue) grow(bb *batchBuf, need int) {
	old := bb.b
	bb.b = make([]byte, len(old), max(2*cap(old), need))
	copy(bb.b, old)
	if len(q.spare) < maxSpare && cap(old) <= maxSpareBytes {
		q.spare = append(q.spare, &batchBuf{b: old[:hdrRoom]})
	}
}

// take hands every waiting batch to the proxy (appended to dst).
func (q *proxyQueue) take(dst []*batchBuf) []*batchBuf {
	q.mu.Lock()
	q.turns++
	q.lately = 0
	for _, bb := range q.batches {
		q.lately = max(q.lately, len(bb.b))
	}
	dst = append(dst, q.batches...)
	clear(q.batches)
	q.batches = q.batches[:0]
	q.queued = 0
	q.mu.Unlock()
	return dst
}

// done gives back what a batch held, once it has been written or
// dropped, and recycles its buffer.
func (q *proxyQueue) done(bb *batchBuf) {
	for _, t := range bb.tickets {
		t.release()
	}
	clear(bb.tickets)
	bb.tickets = bb.tickets[:0]
	q.mu.Lock()
	q.heldN -= bb.heldN
	q.heldBytes -= bb.heldBytes
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
	if len(q.spare) < maxSpare && cap(bb.b) <= maxSpareBytes {
		clear(bb.calls)
		*bb = batchBuf{b: bb.b[:hdrRoom], calls: bb.calls[:0], tickets: bb.tickets[:0]}
		q.spare = append(q.spare, bb)
	}
	q.mu.Unlock()
}

// idle ends a turn of the proxy: it reports whether more is waiting (the
// proxy stays scheduled and takes another turn); otherwise the next push
// wakes it.
func (q *proxyQueue) idle() (more bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.batches) > 0 {
		return true
	}
	q.scheduled = false
	return false
}

// sweep trims the spares of a queue that took no turn since the last
// sweep.
func (q *proxyQueue) sweep() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.turns != q.swept || q.scheduled {
		q.swept = q.turns
		return
	}
	if len(q.spare) <= idleSpares && q.spareBytes() <= idleSpareCap {
		return
	}
	// Keep the largest that fit, at most idleSpares.
	slices.SortFunc(q.spare, func(a, b *batchBuf) int { return cap(b.b) - cap(a.b) })
	keep, total := q.spare[:0], 0
	for _, bb := range q.spare {
		if len(keep) < idleSpares && total+cap(bb.b) <= idleSpareCap {
			keep = append(keep, bb)
			total += cap(bb.b)
		}
	}
	clear(q.spare[len(keep):])
	q.spare = keep
}

// spareBytes is the capacity of the recycled buffers. Under mu.
func (q *proxyQueue) spareBytes() int {
	n := 0
	for _, bb := range q.spare {
		n += cap(bb.b)
	}
	return n
}

// close refuses new entries from now on and wakes the callers waiting
// for room (they take another path). What is queued stays for the proxy
// to write or drop.
func (q *proxyQueue) close() {
	q.mu.Lock()
	q.shut = true
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
	q.mu.Unlock()
}

// depth is the entries waiting, and the bytes waiting or being written.
func (q *proxyQueue) depth() (entries int, bytes int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queued, q.heldBytes
}
