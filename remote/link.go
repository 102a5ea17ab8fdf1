package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/mailroom-go/mailroom/remote/internal/peers"
)

// errLinkClosed is returned when writing to a link that has closed.
var errLinkClosed = errors.New("remote: link closed")

// errUnflushed is why frames still buffered, or cut short in a write,
// when our side of a link closed (a goodbye's lingering close, an idle
// close) are dead letters: they were never written.
var errUnflushed = errors.New("remote: our side of the link closed before they were written")

// link is one authenticated connection. Writers append encoded frames to
// its buffer; one writer goroutine hands everything waiting to the kernel
// in one write. One reader goroutine decodes frames and dispatches them.
// Frames carry a sequence number so that, when the link dies, the runtime
// knows which ones never left this process (ErrNotSent) and which did
// (ErrNodeDown).
type link struct {
	node     *Node
	conn     net.Conn
	role     uint8
	worker   uint32
	outbound bool           // dialed by this node
	dialID   uint64         // the dialer's id for it (ours when outbound); 0 if unknown
	st       peers.LinkWord // where it is in its life (remote/internal/peers/word.go)
	ends     wire.Ends
	peer     *peer
	limit    int // buffered bytes before writers block or fail

	mu       sync.Mutex // protects following
	buf      []byte
	spare    []byte
	seq      uint64 // frames appended
	closeErr error
	room     chan struct{} // closed when the buffer drains; nil if nobody waits

	wmu         sync.Mutex      // serialises writes to conn
	closedCh    chan struct{}   // closed by close()
	ctx         context.Context // cancelled by close(): bounds the reader's waits (a full mailbox)
	cancel      context.CancelFunc
	wake        chan struct{} // one slot: the writer has work
	flushed     atomic.Uint64 // frames whose write has begun (may have left)
	lastRead    atomic.Int64  // unix ns (Node.now) of the last check that saw new frames (liveness loop)
	reads       atomic.Uint64 // reads that returned bytes, and pings and pongs dispatched; the liveness loop turns changes into lastRead
	dataIn      atomic.Uint64 // frames dispatched but pings and pongs (reader only; liveness counts them as reads too)
	ctlOut      atomic.Uint64 // pings and pongs appended (enqueueCtl): seq less these is the data written
	idleMark    atomic.Uint64 // data frames both ways at the last idle check (idle.go)
	idleSince   atomic.Int64  // unix ns (Node.now) since when the link carried no data and nothing was pinned to it (idle.go)
	dispatching atomic.Bool   // the reader is delivering into a mailbox (which may make it wait), not waiting on the network
	handling    atomic.Bool   // the reader is handling a frame it read (CPU work, or a wait marked by the flags beside)
	roomWaits   atomic.Int32  // writers waiting for room in the buffer: the peer is not reading (liveness.go)
	admitWait   atomic.Bool   // the reader waits for its peer's admission (admission.go)
	owed        atomic.Int64  // calls and requests taken from this link and not yet answered
	seen        uint64        // reads at the last check (liveness loop only)
	missed      int64         // heartbeat intervals counted missed since last heard (liveness loop only)
	pongs       atomic.Uint64 // pongs received
	pings       uint64        // pings enqueued; under mu
	barriers    []barrier     // waiting for pongs; under mu
	lastSent    atomic.Int64  // unix ns (Node.now) of the last write
	stats       linkStats
	run         sendRun       // the reader's run of sends (sendrun.go); reader only
	lone        bool          // the frame being dispatched holds one element; reader only
	inline      *inboundCall  // a lone call the reader runs itself (reader.go); reader only
	done        chan struct{} // closed when reader and writer have exited
	wg          sync.WaitGroup
}

type linkStats struct {
	bytesOut, bytesIn atomic.Uint64
}

func newLink(n *Node, conn net.Conn, role uint8, outbound bool, e wire.Ends, p *peer) *link {
	now := n.live.now().UnixNano()
	l := &link{
		node: n, conn: conn, role: role, outbound: outbound, ends: e, peer: p,
		limit:    n.cfg.LinkBufferBytes,
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		closedCh: make(chan struct{}),
	}
	l.lastRead.Store(now)
	l.lastSent.Store(now)
	l.idleSince.Store(now)
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l
}

func (l *link) String() string {
	return fmt.Sprintf("%s %s (%016x)", l.kind(), l.ends.PeerNode, l.ends.PeerInc)
}

// kind is the link's role and direction, "native link in", "pool/3 link
// out": String without its peer, for a line that names the peer apart.
func (l *link) kind() string {
	dir := "in"
	if l.outbound {
		dir = "out"
	}
	role := "native"
	if l.role == wire.RolePool {
		role = fmt.Sprintf("pool/%d", l.worker)
	}
	return role + " link " + dir
}

// start runs the reader and writer; dispatch handles each frame.
func (l *link) start(dispatch func(*link, wire.Kind, []byte) error) {
	l.st.MarkStarted()
	l.wg.Add(2)
	l.node.linkWG.Add(1)
	go l.writeLoop()
	go l.readLoop(dispatch)
	go func() {
		l.wg.Wait()
		close(l.done)
		l.peer.forgetDialed(l)
		l.node.linkWG.Done()
	}()
}

// enqueue appends one or more encoded frames (nframes of them). With
// block, a full buffer makes the caller wait; without, it fails with
// actor.ErrOverloaded. It returns the sequence number of the last frame.
func (l *link) enqueue(frames []byte, nframes int, block bool, seqOut *atomic.Uint64) (uint64, error) {
	return l.enqueueThen(frames, nframes, block, seqOut, nil)
}

// enqueueThen is enqueue, calling appended under the link's lock once
// the frames are in the buffer (to number them along with their place).
func (l *link) enqueueThen(frames []byte, nframes int, block bool, seqOut *atomic.Uint64, appended func()) (uint64, error) {
	return l.enqueueUpTo(l.limit, frames, nframes, block, seqOut, appended)
}

// ctlHeadroom is how far control frames a reader must never wait for
// (pongs) and the publish barrier's ping may go past LinkBufferBytes:
// about 800 pongs. A peer that keeps pinging without reading fills it,
// and then the reader waits as before: that is silence, and liveness
// closes the link.
const ctlHeadroom = 4 << 10

// enqueueCtl appends one control frame (a pong, a ping), taking up to
// ctlHeadroom bytes past the link's limit, so that it does not wait on a
// peer that waits on us: when both directions of a link are full, each
// side's reader would otherwise wait, for room to pong, on the other's
// reader. With block, a frame past the headroom waits for room.
func (l *link) enqueueCtl(frame []byte, block bool, appended func()) (uint64, error) {
	seq, err := l.enqueueUpTo(l.limit+ctlHeadroom, frame, 1, block, nil, appended)
	if err == nil {
		l.ctlOut.Add(1) // heartbeats do not keep a link from being idle
	}
	return seq, err
}

// enqueueUpTo is enqueueThen with limit in place of the link's.
func (l *link) enqueueUpTo(limit int, frames []byte, nframes int, block bool, seqOut *atomic.Uint64, appended func()) (uint64, error) {
	l.mu.Lock()
	for !l.st.Closed() && len(l.buf) > 0 && len(l.buf)+len(frames) > limit {
		if !block {
			l.mu.Unlock()
			return 0, actor.ErrOverloaded
		}
		if l.room == nil {
			l.room = make(chan struct{})
		}
		room := l.room
		l.mu.Unlock()
		l.roomWaits.Add(1)
		<-room
		l.roomWaits.Add(-1)
		l.mu.Lock()
	}
	if l.st.Refuses() {
		l.mu.Unlock()
		return 0, errLinkClosed
	}
	wasEmpty := len(l.buf) == 0
	l.buf = append(l.buf, frames...)
	l.seq += uint64(nframes)
	seq := l.seq
	if seqOut != nil {
		seqOut.Store(seq) // before the writer can see the frame
	}
	if appended != nil {
		appended()
	}
	l.mu.Unlock()
	if wasEmpty {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	return seq, nil
}

// enqueueEl encodes one element as a frame and enqueues it; seqOut, if
// not nil, receives its sequence number.
func (l *link) enqueueEl(el *wire.Element, block bool, seqOut *atomic.Uint64) (uint64, error) {
	b := getBuf()
	var err error
	if b.b, err = l.ends.EncodeFrame(b.b[:0], el); err != nil {
		putBuf(b)
		return 0, err
	}
	if len(b.b)-wire.FrameHeader > l.node.cfg.Limits.MaxFrameSize {
		putBuf(b)
		return 0, fmt.Errorf("%w: %s of %d bytes exceeds MaxFrameSize %d", actor.ErrBadMessage, el.Kind, len(b.b)-wire.FrameHeader, l.node.cfg.Limits.MaxFrameSize)
	}
	seq, err := l.enqueue(b.b, 1, block, seqOut)
	putBuf(b)
	return seq, err
}

func (l *link) writeLoop() {
	defer l.wg.Done()
	for {
		<-l.wake
		// The write turn first, then the buffer: a frame queued here (a
		// fence, a pong) is never overtaken by a batch its pool link's
		// owner writes (writeNow), which takes the turn the same way.
		l.wmu.Lock()
		l.mu.Lock()
		if len(l.buf) == 0 {
			closed := l.st.Closed()
			l.mu.Unlock()
			l.wmu.Unlock()
			if closed {
				return
			}
			continue
		}
		out := l.takeBufLocked()
		l.mu.Unlock()
		written, err := l.conn.Write(out)
		l.wmu.Unlock()
		if err != nil {
			if l.writeClosed() {
				// After our goodbye (halfClose): what this write did not
				// hand to the kernel never left. Keep reading until the
				// peer hangs up.
				l.countUnsent(out[frameBoundary(out, written):], errUnflushed)
				continue
			}
			l.close(fmt.Errorf("write: %w", err))
			// The frames this write did not hand to the kernel (the one
			// cut short too) never left: count them like the buffer's.
			l.countUnsent(out[frameBoundary(out, written):], l.reason())
			return
		}
		l.lastSent.Store(l.node.live.now().UnixNano())
		l.stats.bytesOut.Add(uint64(len(out)))
		l.node.stats.bytesOut.Add(uint64(len(out)))
		l.mu.Lock()
		if cap(out) <= 1<<20 {
			l.spare = out[:0]
		}
		fin := len(l.buf) == 0 && l.st.TakeFinIdle()
		l.mu.Unlock()
		if fin {
			l.closeWriteSide() // the idle close is written: a lingering close (idle.go)
		}
	}
}

// takeBufLocked takes the buffer for a write and wakes the senders
// waiting for room. From here its frames may reach the peer even if the
// write fails: they are counted as sent (flushed) before the write, never
// after. Under mu, with wmu held.
func (l *link) takeBufLocked() []byte {
	out := l.buf
	l.buf, l.spare = l.spare[:0], nil
	if l.room != nil {
		close(l.room)
		l.room = nil
	}
	l.node.stats.framesOut.Add(l.seq - l.flushed.Load()) // flushed is stored under mu alone
	l.flushed.Store(l.seq)
	return out
}

// countingReader counts every read that returns bytes: a large frame
// arriving slowly is progress, not silence.
type countingReader struct{ l *link }

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.l.conn.Read(p)
	if n > 0 {
		c.l.reads.Add(1)
	}
	return n, err
}

func isWireError(err error) bool {
	return errors.Is(err, wire.ErrFrameTooLarge) || errors.Is(err, wire.ErrUnknownKind) ||
		errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrTruncated)
}

func readErr(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, net.ErrClosed):
		return errLinkClosed
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("read timeout: %w", err)
	}
	return err
}

// close ends the link once, with a reason; the node fails what was
// pinned to it. Called with no runtime lock held: its effects call out
// (closeLater says which). Under a lock, use closeLater.
func (l *link) close(reason error) {
	var fx effects
	l.closeLater(reason, &fx)
	fx.run()
}

// closeLater is close in two steps: the link's state changes now (it is
// closed, nothing more is written on it, what it buffered is taken, and
// the links it is abandoned for carry their fence), which orders it
// against what follows as close does; the effects are added to fx, for
// the caller to run once it holds no runtime lock: the dead letters of
// the frames it never wrote, closing the connection, and linkDown
// (pending calls failed, watches ended, OnLinkDown and OnPeerGone
// hooks). Dead-letter subscribers and hooks may send to the same peer,
// which takes the locks the caller may hold (node.go's lock order).
func (l *link) closeLater(reason error, fx *effects) {
	if !l.isClosed() {
		l.abandon(fx) // supersede.go
	}
	l.mu.Lock()
	if !l.st.MarkClosed() {
		l.mu.Unlock()
		return
	}
	l.closeErr = reason
	if l.room != nil {
		close(l.room)
		l.room = nil
	}
	unsent := l.buf
	l.buf = nil
	close(l.closedCh)
	l.releaseBarriers(^uint64(0))
	l.mu.Unlock()
	l.cancel() // a reader blocked delivering into a full mailbox gives up
	fx.add(func() {
		l.countUnsent(unsent, reason)
		_ = l.conn.Close() // (a TLS close may wait to write its alert)
		select {
		case l.wake <- struct{}{}:
		default:
		}
		l.linkDown(reason)
	})
}

// effects are what a change of state made under a runtime lock leaves
// to do once every lock is released: whatever calls out (a dead-letter
// subscriber, a hook, a pool's Dropped) or may wait.
type effects []func()

func (fx *effects) add(f func()) { *fx = append(*fx, f) }

// run carries out the effects in the order they were added. Called with
// no runtime lock held.
func (fx *effects) run() {
	for i := 0; i < len(*fx); i++ {
		(*fx)[i]()
	}
	*fx = nil
}

// countUnsent accounts for the frames a closing link never wrote, so
// nothing is lost silently: sends and casts become dead letters, replies
// dropped replies; calls and requests are failed as not sent by linkDown.
func (l *link) countUnsent(b []byte, reason error) {
	n := l.node
	for len(b) > wire.FrameHeader {
		size := wire.FrameLen(b)
		if size <= wire.FrameHeader || size > len(b) {
			return
		}
		switch wire.Unwrap(wire.Kind(b[wire.FrameHeader]), b[wire.FrameHeader+1:size]) {
		case wire.KindSend, wire.KindCast:
			n.stats.droppedUnsent.Add(1)
			actorhooks.DeadLetter(n.sys, actor.PID{Node: l.ends.PeerNode, Incarnation: l.ends.PeerInc}, actor.PID{}, nil,
				fmt.Errorf("%w: dropped with its link to %s (%v)", actor.ErrNotSent, l.ends.PeerNode, reason))
		case wire.KindReply:
			n.stats.repliesDropped.Add(1)
		}
		b = b[size:]
	}
}

// reason is why the link closed (nil while it is up).
func (l *link) reason() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closeErr
}

// frameBoundary is the offset in b of the first frame that does not end
// within b[:n]: the frames before it were written whole.
func frameBoundary(b []byte, n int) int {
	off := 0
	for off < len(b) {
		size := wire.FrameLen(b[off:])
		if size == 0 || off+size > n {
			return off
		}
		off += size
	}
	return off
}

// halfClose ends our side of the connection (FIN, or TLS close_notify)
// while the reader keeps reading, for a lingering close. Whatever would
// be written afterwards (a refusal, a pong) is dropped quietly: the
// goodbye already told the peer what it needs.
func (l *link) halfClose() {
	l.mu.Lock()
	l.st.MarkHalfClosed()
	unsent := l.buf
	l.buf = nil
	l.mu.Unlock()
	// What the goodbye's flush did not reach in time is never written:
	// counted and dead-lettered as a closing link's buffer is.
	l.countUnsent(unsent, errUnflushed)
	if cw, ok := l.conn.(interface{ CloseWrite() error }); ok {
		l.wmu.Lock()
		_ = cw.CloseWrite()
		l.wmu.Unlock()
	}
}

func (l *link) writeClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st.Has(peers.BitHalfClosed)
}

func (l *link) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st.Closed()
}

// bufPool recycles encoding scratch buffers.
type scratch struct{ b []byte }

var bufPool = sync.Pool{New: func() any { return &scratch{b: make([]byte, 0, 512)} }}

func getBuf() *scratch { return bufPool.Get().(*scratch) }

func putBuf(s *scratch) {
	if cap(s.b) > 256<<10 {
		return
	}
	bufPool.Put(s)
}
