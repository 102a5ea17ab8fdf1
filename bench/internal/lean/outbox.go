package lean

import (
	"encoding/binary"
	"errors"
	"sync"

	"google.golang.org/protobuf/proto"
)

// ErrClosed is returned by Put and Push once their buffer is closed.
var ErrClosed = errors.New("lean: closed")

// Outbox is the sender's one buffer of encoded frames: any number of
// producers Put (marshalling under the mutex, into the buffer itself),
// one writer Takes whatever has accumulated.
type Outbox struct {
	limit int                  // bytes at which Put waits for the writer
	ready chan struct{}        // one slot: signalled when buf goes empty -> non-empty
	marsh proto.MarshalOptions // zero: plain proto.Marshal

	mu      sync.Mutex // protects following
	buf     []byte
	closed  bool
	notFull *sync.Cond // Put waits on it while len(buf) >= limit
}

// NewOutbox returns an outbox that holds at most about limit bytes (a
// Put that finds it full waits; one frame may take it past the limit).
func NewOutbox(limit int) *Outbox {
	o := &Outbox{limit: limit, ready: make(chan struct{}, 1)}
	o.notFull = sync.NewCond(&o.mu)
	return o
}

// Put appends m as one frame: u32be length, then its protobuf encoding.
func (o *Outbox) Put(m proto.Message) error {
	o.mu.Lock()
	for len(o.buf) >= o.limit && !o.closed {
		o.notFull.Wait()
	}
	if o.closed {
		o.mu.Unlock()
		return ErrClosed
	}
	start := len(o.buf)
	b, err := o.marsh.MarshalAppend(append(o.buf, 0, 0, 0, 0), m)
	if err != nil {
		o.buf = o.buf[:start]
		o.mu.Unlock()
		return err
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	o.buf = b
	o.mu.Unlock()
	if start == 0 {
		select {
		case o.ready <- struct{}{}:
		default:
		}
	}
	return nil
}

// Take waits until the outbox holds something and returns all of it,
// leaving spare (emptied) in its place: the caller owns the returned
// bytes until it hands them back as a later spare. After Close it still
// returns what is left, then false.
func (o *Outbox) Take(spare []byte) ([]byte, bool) {
	for {
		o.mu.Lock()
		if len(o.buf) > 0 {
			out := o.buf
			o.buf = spare[:0]
			o.mu.Unlock()
			o.notFull.Broadcast()
			return out, true
		}
		if o.closed {
			o.mu.Unlock()
			return nil, false
		}
		o.mu.Unlock()
		<-o.ready
	}
}

// Close makes every waiting and later Put fail with ErrClosed and Take
// return false once the outbox is empty. Idempotent.
func (o *Outbox) Close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.notFull.Broadcast()
	select {
	case o.ready <- struct{}{}:
	default:
	}
}
