package remote

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/mailroom-go/mailroom/remote/internal/peers"
)

// errFenceFull closes a link too full to carry a fence.
var errFenceFull = errors.New("remote: link too full to fence an abandoned one")

// When a node closes one of its links to a peer incarnation that is still
// alive (it went silent, a write failed, it was reset), frames it wrote on
// that link may still wait, unread, in the peer's kernel: a frozen peer
// that thaws reads them, and its reader for the old link would deliver
// them alongside what arrives on the node's other links, so a sender's
// later messages could overtake its earlier ones. So the node fences the
// abandoned link: every other link it has to that incarnation carries a
// fence frame (CtlFence) naming it, and every link it dials later starts
// with one naming all it abandoned. The peer delivers nothing after a
// fence until the readers of the fenced links have ended: they deliver
// what the kernel holds, reach the close and exit (an old link whose
// close never arrives goes silent and is closed by liveness). Links are
// named by the dialer's id, sent in the hello.
//
// A fence waits at most the heartbeat window (HeartbeatInterval x
// HeartbeatMisses). Then the links it still waits for are closed (their
// unread frames are lost, as a silent link's are; the peer had abandoned
// them), and delivery resumes once their readers have ended, which a
// close makes prompt. Without the bound, links that fence each other
// would wait for ever, busy and never silent.
//
// A pool torn down while its peer lives is fenced the same way
// (fencePool): the native path must not deliver a sender's later
// messages before what the pool's links carried is read. Its links then
// end with a half-close (PoolLink.Finish), so what they carried arrives.

// abandon fences l, an outbound link closing while its peer lives.
// Called by close before anything else, so no send rerouted because l
// closed can be written before the fence. The closes of links too full
// for the fence leave their effects in fx.
func (l *link) abandon(fx *effects) {
	if l.st.Has(peers.BitGoodbye) || l.peer == nil {
		return
	}
	l.peer.fenceLinks([]*link{l}, fx)
}

// maxAbandoned bounds the ids a peer remembers for the links dialed later.
const maxAbandoned = 256

// fenceLinks fences ls, outbound links to p about to close while p lives
// (each at most once): every other outbound link to p carries a fence
// naming them, and every link dialed later starts with one. A link too
// full for its fence is closed before fenceLinks returns, and the effects
// of its close are left in fx (link.closeLater): callers hold p.pathMu.
func (p *peer) fenceLinks(ls []*link, fx *effects) {
	var ids []uint64
	for _, l := range ls {
		if l.outbound && l.dialID != 0 && l.st.MarkFenced() {
			ids = append(ids, l.dialID)
		}
	}
	if len(ids) == 0 {
		return
	}
	var unfenced []*link
	p.mu.Lock()
	if p.endingLocked() {
		p.mu.Unlock()
		return // no traffic to it follows
	}
	p.abandoned = append(p.abandoned, ids...)
	if len(p.abandoned) > maxAbandoned {
		p.abandoned = append(p.abandoned[:0], p.abandoned[len(p.abandoned)-maxAbandoned:]...)
	}
	for m := range p.links {
		if !m.outbound || m.st.Has(peers.BitFenced) {
			continue
		}
		// Never wait under the peer's lock: a link too full to take the
		// fence is abandoned too (its buffered frames are counted as
		// unsent), which orders it the same way.
		if _, err := m.enqueueThen(fenceFrames(&m.ends, ids), fenceCount(ids), false, nil, nil); errors.Is(err, actor.ErrOverloaded) {
			unfenced = append(unfenced, m)
		}
	}
	p.mu.Unlock()
	for _, m := range unfenced {
		m.closeLater(errFenceFull, fx)
	}
}

// fenceFrames encodes fences naming ids, at most maxFenceLinks each.
func fenceFrames(e *wire.Ends, ids []uint64) []byte {
	var b []byte
	for len(ids) > 0 {
		k := min(len(ids), wire.MaxFenceLinks)
		b = e.AppendFrame(b, &wire.Element{Kind: wire.KindControl, Control: &wire.Control{Op: wire.CtlFence, Links: ids[:k]}})
		ids = ids[k:]
	}
	return b
}

func fenceCount(ids []uint64) int { return (len(ids) + wire.MaxFenceLinks - 1) / wire.MaxFenceLinks }

// fenceNewLocked gives a link being registered to p its first frames:
// fences naming every link we abandoned to p. Under p.mu (so a fence
// either sees the link or is in the list), before the link starts.
func (p *peer) fenceNewLocked(l *link) {
	if len(p.abandoned) == 0 {
		return
	}
	_, _ = l.enqueueThen(fenceFrames(&l.ends, p.abandoned), fenceCount(p.abandoned), false, nil, nil) // the buffer is empty
}

// awaitFenced holds the reader of l until the readers of the peer's links
// named by ids have ended, or l closed. It does not count as silence, and
// it lasts at most the heartbeat window: then the links still waited for
// are closed, and their readers end.
func (l *link) awaitFenced(ids []uint64) {
	p := l.peer
	var olds []*link
	p.mu.Lock()
	for _, id := range ids {
		if old := p.dialed[id]; old != nil && old != l {
			olds = append(olds, old)
		}
	}
	p.mu.Unlock()
	if len(olds) == 0 {
		return
	}
	l.node.stats.fenceWaits.Add(1)
	l.dispatching.Store(true) // waiting on ourselves, not on the peer
	defer l.dispatching.Store(false)
	window := l.node.cfg.window()
	timer := time.NewTimer(window)
	defer timer.Stop()
	expired := timer.C
	for i, old := range olds {
		closeRest := func() {
			l.node.stats.fenceTimeouts.Add(1)
			for _, o := range olds[i:] {
				if !o.isClosed() {
					l.node.peerLine(slog.LevelWarn, "a fence waited the heartbeat window; closing the link it waits for", "peer", l.ends.PeerNode, "link", l.kind(), "fenced", o.kind(), "waited", window)
					o.close(fmt.Errorf("%w: a fence on %s waited %v for it", errFenceTimeout, l.String(), window))
				}
			}
		}
		if !l.waitEnded(old, &expired, closeRest) {
			return
		}
	}
}

// errFenceTimeout closes a fenced link a fence waited the heartbeat
// window for.
var errFenceTimeout = errors.New("remote: fenced link still open after the heartbeat window")

// waitEnded waits until old's reader has ended (or old never ran); false
// if l closed first. When expired fires, onExpire runs once (it closes
// old, whose reader then ends promptly: every wait of a reader ends with
// its link).
func (l *link) waitEnded(old *link, expired *<-chan time.Time, onExpire func()) bool {
	closed := old.closedCh
	for {
		select {
		case <-old.done:
			return true
		case <-closed:
			if !old.st.Has(peers.BitStarted) {
				return true // it never ran (its welcome failed): nothing to deliver
			}
			closed = nil // only the end of its reader matters now
		case <-l.closedCh:
			return false
		case <-*expired:
			*expired = nil
			onExpire()
		}
	}
}

// forgetDialed drops an inbound link from its peer's index once its
// reader and writer have exited.
func (p *peer) forgetDialed(l *link) {
	if l.outbound || l.dialID == 0 {
		return
	}
	p.mu.Lock()
	if p.dialed[l.dialID] == l {
		delete(p.dialed, l.dialID)
	}
	p.mu.Unlock()
}
