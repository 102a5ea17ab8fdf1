package remote

import (
	"errors"

	"github.com/mailroom-go/mailroom/actor"
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

// abandon fences l, an outbound link closing while its peer lives.
// Called by close before anything else, so no send rerouted because l
// closed can be written before the fence.
func (l *link) abandon() {
	p := l.peer
	if !l.outbound || l.dialID == 0 || p == nil || l.goodbye.Load() != 0 || !l.fenced.CompareAndSwap(false, true) {
		return
	}
	var unfenced []*link
	p.mu.Lock()
	if p.gone || p.leaving {
		p.mu.Unlock()
		return // no traffic to it follows
	}
	p.abandoned = append(p.abandoned, l.dialID)
	if len(p.abandoned) > maxFenceLinks {
		p.abandoned = append(p.abandoned[:0], p.abandoned[len(p.abandoned)-maxFenceLinks:]...)
	}
	frame := l.ends.appendFrame(nil, &Element{Kind: KindControl, Control: &Control{Op: CtlFence, Links: []uint64{l.dialID}}})
	for m := range p.links {
		if m == l || !m.outbound {
			continue
		}
		// Never wait under the peer's lock: a link too full to take the
		// fence is abandoned too (its buffered frames are counted as
		// unsent), which orders it the same way.
		if _, err := m.enqueueThen(frame, 1, false, nil, nil); errors.Is(err, actor.ErrOverloaded) {
			unfenced = append(unfenced, m)
		}
	}
	p.mu.Unlock()
	for _, m := range unfenced {
		m.close(errFenceFull)
	}
}

// fenceNew gives a link being registered to p its first frame: a fence
// naming every link we abandoned to p. Under p.mu (so an abandon either
// sees the link or is in the list), before the link starts.
func (p *peer) fenceNewLocked(l *link) {
	if len(p.abandoned) == 0 {
		return
	}
	frame := l.ends.appendFrame(nil, &Element{Kind: KindControl, Control: &Control{Op: CtlFence, Links: append([]uint64(nil), p.abandoned...)}})
	_, _ = l.enqueueThen(frame, 1, false, nil, nil) // the buffer is empty
}

// awaitFenced holds the reader of l until the readers of the peer's links
// named by ids have ended, or l closed. It does not count as silence.
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
	l.dispatching.Store(true) // waiting on ourselves, not on the peer
	defer l.dispatching.Store(false)
	for _, old := range olds {
		select {
		case <-old.done:
			continue
		case <-old.closedCh:
		case <-l.closedCh:
			return
		}
		if !old.started.Load() {
			continue // it never ran (its welcome failed): nothing to deliver
		}
		select {
		case <-old.done:
		case <-l.closedCh:
			return
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
