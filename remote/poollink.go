package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/actor"
)

// PoolLink is one proxy's link, paired with one worker of a peer
// incarnation's receiver pool. Its owner (a proxy actor) writes batches
// with WriteBatch from one goroutine; heartbeats and the peer's native
// replies share the connection.
type PoolLink struct {
	n     *Node
	l     *link
	stats *PoolStats
	buf   []byte      // the batch frame, reused; owned by the writing goroutine
	keep  []*Outgoing // entries of the frame being built
	hold  func()      // test hook: called before each write
	open  bool        // the fence of its pool has been passed
}

// DialPool connects to worker of node's incarnation inc. It fails if inc
// is not node's current incarnation or the peer refuses (pool disabled,
// worker out of range, incarnation changed).
func (n *Node) DialPool(ctx context.Context, node string, inc uint64, worker int) (*PoolLink, error) {
	n.mu.Lock()
	s := n.slots[node]
	var addr string
	if s != nil {
		addr = s.addr
	}
	closing := n.closing
	n.mu.Unlock()
	switch {
	case closing:
		return nil, actor.ErrStopped
	case addr == "":
		return nil, fmt.Errorf("%w: no address for %s", actor.ErrUnreachable, node)
	}
	h := n.helloFor(rolePool, uint32(worker), node, inc)
	conn, srv, err := n.dial(ctx, addr, h)
	if err != nil {
		return nil, fmt.Errorf("%w: pool link %d to %s: %w", actor.ErrUnreachable, worker, node, err)
	}
	l, err := n.attach(&roleConn{Conn: conn, role: rolePool, worker: uint32(worker)}, srv, true, h.LinkID)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &PoolLink{n: n, l: l, stats: n.PoolStatsFor(node)}, nil
}

// Closed is closed when the link has ended.
func (pl *PoolLink) Closed() <-chan struct{} { return pl.l.closedCh }

// Err is why the link ended (nil while it is up).
func (pl *PoolLink) Err() error {
	pl.l.mu.Lock()
	defer pl.l.mu.Unlock()
	return pl.l.closeErr
}

// Close ends the link at once: for links that carried nothing, or that
// failed. A link whose batches must arrive ends with Finish.
func (pl *PoolLink) Close(reason error) { pl.l.close(reason) }

// Finish ends the link after its owner's last batch: nothing more is
// written, our side is half-closed (FIN, or TLS close_notify), and the
// link keeps reading until the peer closes its side. Closing at once
// with unread bytes in our socket would make the kernel reset the
// connection, and the reset would destroy batches the peer had not read
// yet; after a half-close they all arrive (a lingering close). Liveness
// still closes the link if the peer goes silent. A closed link is left
// as is.
func (pl *PoolLink) Finish() { pl.l.finish() }

// Worker is the peer worker this link is paired with.
func (pl *PoolLink) Worker() int { return int(pl.l.worker) }

// Incarnation is the peer incarnation.
func (pl *PoolLink) Incarnation() uint64 { return pl.l.ends.peerInc }

// SetHold installs a test hook run before each write (nil removes it).
func (pl *PoolLink) SetHold(f func()) { pl.hold = f }

// WriteBatch writes items as batch frames (more than one only when they
// would exceed MaxFrameSize) and returns when the kernel has them. Calls
// are marked sent before the write: a link that dies mid-write fails them
// as may have executed, never wrongly as not executed. An item meant for
// another incarnation is dropped and counted (the guard; it must not
// happen). A write error closes the link.
func (pl *PoolLink) WriteBatch(items []*Outgoing) error {
	if !pl.open {
		// The native path delivers what it holds first (barrier.go).
		select {
		case <-pl.l.peer.fence():
			pl.open = true
		case <-pl.l.closedCh:
			return errLinkClosed
		}
	}
	inc, max := pl.l.ends.peerInc, pl.n.cfg.MaxFrameSize
	all := items
	defer func() {
		for _, it := range all {
			it.Release() // written or not, they have left the queue
		}
	}()
	b := pl.buf[:0]
	for len(items) > 0 {
		// Take as many items as fit in one frame (at least one).
		size, n := 0, 0
		for n < len(items) {
			it := items[n]
			if n > 0 && size+len(it.entry)+16 > max {
				break
			}
			size += len(it.entry)
			n++
		}
		b, start := beginFrame(b[:0], KindBatch)
		// Decide each entry once: wrong incarnation (the guard) or a call
		// abandoned while queued are skipped; the rest are claimed as sent.
		keep := pl.keep[:0]
		for _, it := range items[:n] {
			switch {
			case it.inc != inc:
				pl.stats.GuardViolations.Add(1)
				pl.n.log.Error("dropped an entry meant for another incarnation", "link", pl.l.String(), "entry_incarnation", fmt.Sprintf("%016x", it.inc))
			case it.call != nil && !it.call.markSent():
				// failed as not sent already; it must not run
			default:
				if it.call != nil {
					it.call.sentOn.Store(pl.l)
				}
				keep = append(keep, it)
			}
		}
		count := len(keep)
		b = appendUvarint(b, uint64(count))
		for _, it := range keep {
			b = append(b, it.entry...)
		}
		clear(keep)
		pl.keep = keep[:0]
		b = endFrame(b, start)
		items = items[n:]
		if count == 0 {
			continue
		}
		if pl.hold != nil {
			pl.hold()
		}
		if err := pl.l.writeNow(b); err != nil {
			return err
		}
		pl.stats.observe(count, len(b))
		pl.buf = b
	}
	if cap(pl.buf) > 4<<20 {
		pl.buf = nil
	}
	return nil
}

// writeNow writes one frame synchronously, serialised with the writer
// goroutine (heartbeats, cancels).
func (l *link) writeNow(b []byte) error {
	if l.isClosed() || l.writeClosed() {
		return errLinkClosed
	}
	l.wmu.Lock()
	_, err := l.conn.Write(b)
	l.wmu.Unlock()
	if err != nil {
		if l.writeClosed() {
			return errLinkClosed
		}
		err = fmt.Errorf("write: %w", err)
		l.close(err)
		return err
	}
	l.lastSent.Store(time.Now().UnixNano())
	l.stats.bytesOut.Add(uint64(len(b)))
	l.node.stats.bytesOut.Add(uint64(len(b)))
	return nil
}

// finish half-closes l after what its writer has been handed (pings and
// pongs: a pool link's batches are written by its proxy, which has
// stopped) and keeps it reading until the peer closes. Frames still in
// the buffer are dropped and counted.
func (l *link) finish() {
	l.mu.Lock()
	if l.closed || l.wclosed {
		l.mu.Unlock()
		return
	}
	l.wclosed = true
	unsent := l.buf
	l.buf = nil
	if l.room != nil {
		close(l.room)
		l.room = nil
	}
	l.mu.Unlock()
	l.countUnsent(unsent, errFinished)
	cw, ok := l.conn.(interface{ CloseWrite() error })
	if !ok {
		// No half-close (an in-memory pipe, whose writes return only once
		// read): nothing written can be lost by closing.
		l.close(errLinkClosed)
		return
	}
	l.wmu.Lock()
	err := cw.CloseWrite()
	l.wmu.Unlock()
	if err != nil {
		l.close(errLinkClosed)
	}
}

// errFinished is why a finishing link dropped frames it had buffered.
var errFinished = errors.New("remote: link finished")
