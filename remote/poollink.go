package remote

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/mailroom-go/mailroom/remote/internal/peers"
)

// poolLink is one proxy's link, paired with one worker of a peer
// incarnation's receiver pool, with the proxy's queue (proxyqueue.go):
// callers append to the queue, and the link's owner (a proxy actor),
// woken by OnQueued, writes what waits with Flush from one goroutine.
// Heartbeats and the peer's native replies share the connection.
type poolLink struct {
	n     *Node
	l     *link
	stats *poolStats
	q     proxyQueue
	hold  func()                  // test hook: called before each write
	open  atomic.Bool             // the fence of its pool has been passed
	pool  atomic.Pointer[pubPool] // set by Publish, before the pool is routed
	// fenceWait: Flush waits for the fence (tests read it).
	fenceWait atomic.Bool

	fmu   sync.Mutex  // serialises turns: protects following
	taken []*batchBuf // the batches of the current turn
	cut   []int       // scratch for abandoned calls
}

// OnQueued sets what the link calls when its queue goes from idle to
// having work: the owner's wake-up (it must not block; it is called on
// the goroutine of the caller that queued). The owner then calls Flush.
// Set it before the link's pool is published.
func (pl *poolLink) OnQueued(wake func()) { pl.q.wake = wake }

// QueueLen is the number of messages waiting in the link's queue.
func (pl *poolLink) QueueLen() int {
	n, _ := pl.q.depth()
	return n
}

// Closed is closed when the link has ended.
func (pl *poolLink) Closed() <-chan struct{} { return pl.l.closedCh }

// Err is why the link ended (nil while it is up).
func (pl *poolLink) Err() error {
	pl.l.mu.Lock()
	defer pl.l.mu.Unlock()
	return pl.l.closeErr
}

// Close ends the link at once: for links that carried nothing, or that
// failed. A link whose batches must arrive ends with Finish.
func (pl *poolLink) Close(reason error) { pl.l.close(closedHere{reason}) }

// closedHere is the reason of a close this node decided on its own (its
// pool master tearing down or rebuilding a pool), not one a silence, an
// error or the peer caused: lostreply.go does not take it for a link
// that ended unread. It reads as the reason it wraps.
type closedHere struct{ error }

func (c closedHere) Unwrap() error { return c.error }

// Finish ends the link after its owner's last batch: nothing more is
// written, our side is half-closed (FIN, or TLS close_notify), and the
// link keeps reading until the peer closes its side. Closing at once
// with unread bytes in our socket would make the kernel reset the
// connection, and the reset would destroy batches the peer had not read
// yet; after a half-close they all arrive (a lingering close). Liveness
// still closes the link if the peer goes silent. A closed link is left
// as is.
func (pl *poolLink) Finish() { pl.l.finish() }

// Worker is the peer worker this link is paired with.
func (pl *poolLink) Worker() int { return int(pl.l.worker) }

// Incarnation is the peer incarnation.
func (pl *poolLink) Incarnation() uint64 { return pl.l.ends.PeerInc }

// SetHold installs a test hook run before each write (nil removes it).
func (pl *poolLink) SetHold(f func()) { pl.hold = f }

// Flush writes every batch waiting in the queue, one frame each, and
// returns when the kernel has them; more reports that others arrived
// meanwhile (the owner takes another turn). Calls are claimed (marked
// sent) just before their batch is written, so a link that dies
// mid-write fails them as may have executed, never wrongly as not
// executed; a call abandoned while queued (answered "not sent") is cut
// out. A write error closes the link: what this Flush had not written
// is dropped (DropQueued's rules) and the error returned; the dead
// letters of its sends and casts are published once the link's turn is
// over (a subscriber may send to the same peer, through this very queue).
func (pl *poolLink) Flush() (more bool, err error) {
	if !pl.open.Load() {
		pool := pl.pool.Load()
		if pool == nil {
			return false, nil // not published: nothing can be queued
		}
		// The native path delivers what it holds first (barrier.go).
		pl.fenceWait.Store(true)
		select {
		case <-pool.fence:
			pl.fenceWait.Store(false)
			pl.open.Store(true)
		case <-pl.l.closedCh:
			pl.fenceWait.Store(false)
			return false, errLinkClosed
		}
	}
	var fx effects
	pl.fmu.Lock()
	more, err = pl.flush(&fx)
	pl.fmu.Unlock()
	fx.run()
	return more, err
}

// flushOwned is a turn taken by the goroutine whose push found the queue
// idle (a caller, or the worker of a reply: they wait for the other side
// anyway): it writes what waits, from its own goroutine, and hands what
// arrived meanwhile to the proxy. An idle path so costs no hand-off to
// the proxy's goroutine; under load the proxy's turns batch as before.
// Only after the fence (open). With yield it first lets the goroutines
// already runnable add theirs, as the proxy does, so that a crowd is one
// batch, not a write each: without it 1,000 callers wrote batches of
// 1.5-3 and spent twice the CPU per call. A lone caller does not yield.
func (pl *poolLink) flushOwned(yield bool) {
	if yield {
		runtime.Gosched()
	}
	var fx effects
	pl.fmu.Lock()
	more, err := pl.flush(&fx)
	pl.fmu.Unlock()
	fx.run()
	if err == nil && more {
		pl.q.wake() // the turn stays owned: the proxy's now
	}
	// On an error the link has closed: its proxy ends, and the pool's
	// teardown settles the rest.
}

// flush is one turn; under fmu. After a failed write the queue takes
// nothing more (the link is closed: senders fall back to the native
// path), and the dead letters of what it drops are left in fx.
func (pl *poolLink) flush(fx *effects) (more bool, err error) {
	pl.taken = pl.q.take(pl.taken[:0])
	for i, bb := range pl.taken {
		if err := pl.write(bb, fx); err != nil {
			pl.q.close()
			pl.drop(pl.taken[i:i+1], fmt.Errorf("%w: pool link failed during the write (may have been delivered): %v", actor.ErrNodeDown, err), fx)
			pl.drop(pl.taken[i+1:], fmt.Errorf("%w: pool link failed: %v", actor.ErrNotSent, err), fx)
			clear(pl.taken)
			return false, err
		}
		pl.q.done(bb)
	}
	clear(pl.taken)
	return pl.q.idle(), nil
}

// write claims the calls of one batch and writes it as one frame. A
// failed write closes the link, and leaves the close's effects in fx.
func (pl *poolLink) write(bb *batchBuf, fx *effects) error {
	cut := pl.cut[:0]
	for _, c := range bb.calls {
		if c.pc.markSent() {
			c.pc.sentOn.Store(pl.l)
		} else {
			cut = append(cut, c.off) // failed as not sent already: it must not run
		}
	}
	if len(cut) > 0 {
		bb.cut(cut)
	}
	pl.cut = cut[:0]
	if bb.n == 0 {
		return nil
	}
	frame := bb.frame()
	if pl.hold != nil {
		pl.hold()
	}
	if err := pl.l.writeNow(frame, fx); err != nil {
		return err
	}
	pl.stats.Observe(bb.n, len(frame))
	return nil
}

// DropQueued closes the queue to new messages and accounts for what it
// still holds, which will never be written here: replies are rerouted
// to another live link of the caller's incarnation (a caller must never
// be left waiting), calls and requests are left to the pool's teardown
// (which fails them as not sent), sends and casts become counted dead
// letters with reason, published once the link's turn is over. The
// owner calls it when it ends, after closing the link.
func (pl *poolLink) DropQueued(reason error) {
	var fx effects
	pl.fmu.Lock()
	pl.q.close()
	batches := pl.q.take(nil)
	pl.drop(batches, reason, &fx)
	pl.q.idle()
	pl.fmu.Unlock()
	fx.run()
}

// drop accounts for batches that will not be written (DropQueued). The
// dead letters of sends and casts are left in fx, for after fmu.
func (pl *poolLink) drop(batches []*batchBuf, reason error, fx *effects) {
	for _, bb := range batches {
		b := bb.entries()
		for len(b) >= 5 {
			end := 5 + int(wire.GetU32(b[1:]))
			if end > len(b) {
				break
			}
			pl.dropEntry(wire.Unwrap(wire.Kind(b[0]), b[5:end]), b[:end], reason, fx)
			b = b[end:]
		}
		pl.q.done(bb)
	}
}

func (pl *poolLink) dropEntry(k wire.Kind, entry []byte, reason error, fx *effects) {
	n := pl.n
	switch k {
	case wire.KindCall, wire.KindRequest:
		// its pool's teardown fails it (not sent), or it was sent
	case wire.KindReply:
		if !pl.reroute(entry) {
			n.stats.repliesDropped.Add(1)
		}
	default:
		o := &outgoing{node: pl.l.ends.PeerNode, kind: k}
		if pool := pl.pool.Load(); pool != nil && pool.dropped != nil {
			fx.add(func() { pool.dropped(o.Op(), reason) })
			return
		}
		fx.add(func() { actorhooks.DeadLetter(n.sys, actor.PID{Node: pl.l.ends.PeerNode}, actor.PID{}, o, reason) })
	}
}

// reroute sends a reply entry as a frame of its own on any live link to
// the caller's incarnation (every link of a peer carries replies).
func (pl *poolLink) reroute(entry []byte) bool {
	l := pl.l.peer.replyLink()
	if l == nil {
		return false
	}
	// A batch entry is kind, u32 length, body; a frame is u32 length of
	// kind+body, kind, body.
	body := entry[5:]
	frame := make([]byte, wire.FrameHeader+1+len(body))
	wire.PutU32(frame, uint32(len(body)+1))
	frame[wire.FrameHeader] = entry[0]
	copy(frame[wire.FrameHeader+1:], body)
	if _, err := l.enqueue(frame, 1, true, nil); err != nil {
		return false
	}
	pl.n.stats.repliesNative.Add(1)
	return true
}

// writeNow writes one frame synchronously, serialised with the writer
// goroutine (heartbeats, pongs, fences): frames queued on the link before
// it are written first. A failed write closes l: what the close leaves to
// do (linkDown, the dead letters of what was not written) is added to fx,
// for after the owner's turn.
func (l *link) writeNow(b []byte, fx *effects) error {
	l.wmu.Lock()
	l.mu.Lock()
	if l.st.Has(peers.BitClosed | peers.BitHalfClosed) {
		l.mu.Unlock()
		l.wmu.Unlock()
		return errLinkClosed
	}
	var queued []byte
	if len(l.buf) > 0 {
		queued = l.takeBufLocked()
	}
	l.mu.Unlock()
	if len(queued) > 0 {
		written, err := l.conn.Write(queued)
		if err != nil {
			l.wmu.Unlock()
			return l.writeFailed(err, queued, written, fx)
		}
		l.stats.bytesOut.Add(uint64(len(queued)))
		l.node.stats.bytesOut.Add(uint64(len(queued)))
	}
	_, err := l.conn.Write(b)
	l.wmu.Unlock()
	if err != nil {
		return l.writeFailed(err, nil, 0, fx)
	}
	l.lastSent.Store(l.node.live.now().UnixNano())
	l.stats.bytesOut.Add(uint64(len(b)))
	l.node.stats.bytesOut.Add(uint64(len(b)))
	l.node.stats.framesOut.Add(1)
	return nil
}

// writeFailed closes l after a write of its owner failed; the frames of
// queued the write did not hand to the kernel are counted as unsent.
func (l *link) writeFailed(err error, queued []byte, written int, fx *effects) error {
	if l.writeClosed() {
		return errLinkClosed
	}
	err = fmt.Errorf("write: %w", err)
	l.closeLater(err, fx)
	if queued != nil {
		unsent := queued[frameBoundary(queued, written):]
		fx.add(func() { l.countUnsent(unsent, err) })
	}
	return err
}

// finish half-closes l after what its writer has been handed (pings and
// pongs: a pool link's batches are written by its proxy, which has
// stopped) and keeps it reading until the peer closes. Frames still in
// the buffer are dropped and counted.
func (l *link) finish() {
	l.mu.Lock()
	if l.st.Has(peers.BitClosed | peers.BitHalfClosed) {
		l.mu.Unlock()
		return
	}
	l.st.MarkHalfClosed()
	unsent := l.buf
	l.buf = nil
	if l.room != nil {
		close(l.room)
		l.room = nil
	}
	l.mu.Unlock()
	l.countUnsent(unsent, errFinished)
	l.closeWriteSide()
}

// closeWriteSide ends l's writing side (FIN, or TLS close_notify) and leaves
// its reader reading until the peer closes: a lingering close, so that
// nothing written is reset away. A connection that cannot half-close (an
// in-memory pipe, whose writes return only once read) is closed: nothing
// written can be lost by that.
func (l *link) closeWriteSide() {
	cw, ok := l.conn.(interface{ CloseWrite() error })
	if !ok {
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
