package remote

import (
	"errors"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/wire"
)

// Ordering across a change of path. A sender's messages to one target
// keep their order along one path (a native link, or one proxy's pool
// link), and a sender moves from the native path to the pool when a pool
// is published. What the native path still holds toward the peer (in its
// buffer, in the kernels, in the peer's reader waiting on a full
// mailbox) must be delivered before anything the pool carries.
//
// The peer handles a link's frames in order and answers a ping with a
// pong only once every frame before the ping was handled (its sends
// delivered into their mailboxes), and never drops a pong. So a ping on
// the native link, sent once no native send can follow it, is a barrier:
// when its pong comes back, the native path has delivered everything.
// Publish sends that ping under the peer's path lock (native sends hold
// it shared and check the route under it), before the route changes, and
// gives it to the pool (its fence) before anyone can push into it: every
// link of the pool waits for the pong before its first write.

// barrier is a wait for the pong of ping number n on a link.
type barrier struct {
	n  uint64
	ch chan struct{}
}

// ping enqueues a ping and returns its number on the link: pongs come
// back in order, so pong k answers ping k. It takes the control headroom
// (enqueueCtl) and never waits: ErrOverloaded past it.
func (l *link) ping() (uint64, error) {
	var n uint64
	_, err := l.enqueueCtl(pingFrame, false, func() {
		l.pings++
		n = l.pings
	})
	return n, err
}

// pingFrame and pongFrame are whole frames: they have no body.
var (
	pingFrame = []byte{0, 0, 0, 1, byte(wire.KindPing)}
	pongFrame = []byte{0, 0, 0, 1, byte(wire.KindPong)}
)

// errBarrierFull closes a native link too full to take even the publish
// barrier's ping within its control headroom.
var errBarrierFull = errors.New("remote: link too full to take the ping of a publish barrier")

// barrier sends a ping and returns a channel closed when its pong
// arrives, or when the link closes (nothing more comes on it then). It
// never waits: a link too full to take the ping is closed, which orders
// it the same way; the effects of that close (its unsent frames counted
// as dead letters, linkDown) are left in fx, for after the path lock.
func (l *link) barrier(fx *effects) <-chan struct{} {
	ch := make(chan struct{})
	n, err := l.ping()
	if errors.Is(err, actor.ErrOverloaded) {
		l.closeLater(errBarrierFull, fx)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil || l.st.Closed() || l.pongs.Load() >= n {
		close(ch)
		return ch
	}
	l.barriers = append(l.barriers, barrier{n: n, ch: ch})
	return ch
}

// onPong counts a pong and releases the barriers it answers.
func (l *link) onPong() {
	n := l.pongs.Add(1)
	l.mu.Lock()
	l.releaseBarriers(n)
	l.mu.Unlock()
}

// releaseBarriers closes the barriers of pings up to n. Under l.mu.
func (l *link) releaseBarriers(n uint64) {
	keep := l.barriers[:0]
	for _, b := range l.barriers {
		if b.n <= n {
			close(b.ch)
		} else {
			keep = append(keep, b)
		}
	}
	l.barriers = keep
}

// closedChan is a channel that is already closed.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// publishFence is the fence of a pool about to be published for p: a
// barrier on our native link, if there is one. Called with p.pathMu held
// exclusively, before the route changes, so no native send can come
// after the ping, and the pool has its fence before anyone can push into
// it. What closing a link too full for the ping leaves to do is added to
// fx.
func (p *peer) publishFence(fx *effects) <-chan struct{} {
	if l := p.outLink(); l != nil {
		return l.barrier(fx)
	}
	return closedChan
}
