package remote

import (
	"context"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/wire"
)

// path is a way to one peer incarnation that an outgoing element takes:
// a published pool (pubPool, its proxies' queues) or a native link. A
// pending call keeps the path it was pushed on (pendingCall.via), so that
// the death of that path fails it, with a class the path decides: a
// pooled call still queued in a proxy never left (not executed), a native
// frame past the link's flushed mark may have.
//
// routeFor (outbound.go) decides which path an element takes; deliver
// pushes it. The push is called on the concrete type the decision
// returned, not through this interface: an interface call would move
// every element and its delivery to the heap (one more allocation per
// message).
type path interface {
	// wasSent reports whether pc, pushed on this path, may have left this
	// process. A pooled call still queued is abandoned by the question
	// (its proxy will never write it), so that "no" stays true.
	wasSent(pc *pendingCall) bool
	// mayRun reports, when pc's caller gives up, whether the call can
	// still run on the peer.
	mayRun(pc *pendingCall) bool
	// cancelCall queues el (a KindCancel) behind the call on this same path;
	// false when the path cannot take it (the caller then uses a control
	// link).
	cancelCall(el *wire.Element) bool
}

// What an element is, for the paths: how a pool shards it, whether a
// queue's bounds apply, which counters count it.
type deliveryKind uint8

const (
	deliverOneWay deliveryKind = iota // a send or a cast: fire and forget
	deliverCall                       // a call or a request: pending until its reply
	deliverReply                      // a reply to a call or request the peer made
)

// delivery is one outgoing element on its way: where it goes and what
// the paths need to carry it. It lives on its sender's stack.
type delivery struct {
	kind   deliveryKind
	op     string       // for errors: "send", "cast", "call", "request"
	node   string       // the peer node
	inc    uint64       // the incarnation it is pinned to; 0 for any (not replies)
	tg     target       // for errors
	sender actor.PID    // its sender: a pool's shard keeps one sender's order
	el     wire.Element // in here, not pointed to: it stays on the stack
	// calls
	ctx   context.Context // bounds the wait for a link
	pc    *pendingCall
	alone bool // no other call waits on the peer (addPending)
	// replies: the link the call came on (its peer is the caller's
	// incarnation), and the call's admission ticket (nil for requests
	// and refusals)
	from *link
	t    *ticket
	// set by deliver: the incarnation that took it
	p *peer
}

// The pool carries what its proxies' queues take.
func (pl *pubPool) wasSent(pc *pendingCall) bool {
	if pc.state.CompareAndSwap(callQueued, callAbandoned) {
		return false
	}
	return pc.state.Load() == callSent
}

func (pl *pubPool) mayRun(pc *pendingCall) bool { return pl.wasSent(pc) }

func (pl *pubPool) cancelCall(*wire.Element) bool { return false }

// push queues d's element on the proxy its shard names: a sender keeps
// one proxy (its order), the root handle's calls take them in turn, a
// reply goes by call id, past the queue's bounds (it must not wait).
func (pl *pubPool) push(d *delivery) error {
	switch d.kind {
	case deliverReply:
		// A call's reply may be written by its worker, when the proxy
		// is idle, at once when no other call of its peer runs here
		// (nor waits to hand its reply on). Not a request's: an
		// actor answers it, and must not wait in a write.
		own := ownNever
		switch {
		case d.t == nil:
		case d.t.a.inflight() == 1:
			own = ownAlone
		default:
			own = ownCrowd
		}
		return pl.enqueue(pl.shard(d.el.ID), &d.el, nil, true, d.t, own)
	case deliverCall:
		return pl.enqueue(pl.callShard(d.sender, d.el.ID), &d.el, d.pc, false, nil, d.callOwn())
	}
	return pl.enqueue(pl.shard(senderKey(d.sender)), &d.el, nil, false, nil, ownNever)
}

// callOwn says how a pooled call may be written. A caller whose ctx can
// end must not wait in a write the kernel holds (a peer that stopped
// reading): its proxy writes. One whose ctx never ends waits for the
// reply or liveness anyway, and may write its own call; at once when no
// other call waits on the peer.
func (d *delivery) callOwn() ownWrite {
	switch {
	case d.ctx.Done() != nil:
		return ownNever
	case d.alone:
		return ownAlone
	}
	return ownCrowd
}

// A native link carries frames in its buffer, numbered.
func (l *link) wasSent(pc *pendingCall) bool {
	seq := pc.seq.Load()
	return seq != 0 && l.flushed.Load() >= seq
}

// mayRun: a frame in the link's buffer will be written unless the link
// dies, so enqueued counts.
func (l *link) mayRun(pc *pendingCall) bool { return pc.seq.Load() != 0 }

func (l *link) cancelCall(el *wire.Element) bool {
	if l.isClosed() {
		return false
	}
	_, err := l.enqueueEl(el, false, nil)
	return !retryFresh(l, err)
}

// push appends d's element to the link's buffer. A send waits for room
// under the Block policy (else fails with ErrOverloaded); calls and
// replies wait. A call's frame number goes into its pending call under
// the link's lock.
func (l *link) push(d *delivery) error {
	switch d.kind {
	case deliverCall:
		_, err := l.enqueueEl(&d.el, true, &d.pc.seq)
		return err
	case deliverReply:
		_, err := l.enqueueEl(&d.el, true, nil)
		return err
	}
	_, err := l.enqueueEl(&d.el, l.node.cfg.SendPolicy == actor.Block, nil)
	return err
}
