package remote

import (
	"context"
	"fmt"

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
// pushes it (pushPooled, pushNative, replyNative). The pushes are not in
// this interface but written on the concrete types: an interface call
// would move every element and its delivery to the heap (one allocation
// more per message; seen with -gcflags=-m), and each frame more on a
// reply's stack made the call workers' stacks grow again (copystack).
type path interface {
	// wasSent reports whether pc, pushed on this path, may have left this
	// process. A pooled call still queued is abandoned by the question
	// (its proxy will never write it), so that "no" stays true.
	wasSent(pc *pendingCall) bool
	// left reports whether pc, pushed on this path, may have left this
	// process, asking nothing of it (lostreply.go).
	left(pc *pendingCall) bool
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

// delivery is what the paths need to carry one outgoing element: where
// it goes, and how. It lives on its sender's stack. The element itself is
// passed beside it, not in it: escape analysis is not field-sensitive,
// and the pending call and the ticket in here are kept by the paths, so
// an element pointed to from here would move to the heap with them (one
// allocation more per message).
type delivery struct {
	kind deliveryKind
	aim  byte   // what the element names as its target, for errors: aimPID, aimName, aimFn
	node string // the peer node
	inc  uint64 // the incarnation it is pinned to (a reply's: its caller's); 0 for any
	root bool   // sent by the root handle (the zero sender): its calls need no order
	key  uint64 // its sender's shard key (senderKey): a pool's shard keeps one sender's order
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

func (pl *pubPool) left(pc *pendingCall) bool { return pc.state.Load() == callSent }

func (pl *pubPool) mayRun(pc *pendingCall) bool { return pl.wasSent(pc) }

func (pl *pubPool) cancelCall(*wire.Element) bool { return false }

// replyOwn says how a pooled reply may be written. A call's reply may be
// written by its worker, when the proxy is idle, at once when no other
// call of its peer runs here (nor waits to hand its reply on). Not a
// request's (no ticket): an actor answers it, and must not wait in a
// write.
func (d *delivery) replyOwn() ownWrite {
	switch {
	case d.t == nil:
		return ownNever
	case d.t.a.inflight() == 1:
		return ownAlone
	}
	return ownCrowd
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

func (l *link) left(pc *pendingCall) bool { return l.wasSent(pc) }

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

// push appends el to the link's buffer. A send waits for room
// under the Block policy (else fails with ErrOverloaded); calls and
// replies wait. A call's frame number goes into its pending call under
// the link's lock.
func (l *link) push(d *delivery, el *wire.Element) error {
	switch d.kind {
	case deliverCall:
		_, err := l.enqueueEl(el, true, &d.pc.seq)
		return err
	case deliverReply:
		_, err := l.enqueueEl(el, true, nil)
		return err
	}
	_, err := l.enqueueEl(el, l.node.cfg.SendPolicy == actor.Block, nil)
	return err
}

// What a send, cast, call or request is aimed at (delivery.aim): the
// target of its errors is read from its element.
const (
	aimPID  byte = 'p' // el.To
	aimName byte = 'n' // el.ToName
	aimFn   byte = 'f' // el.Fn
)

// target is what d's element el is aimed at, for errors.
func (d *delivery) target(el *wire.Element) target {
	switch d.aim {
	case aimPID:
		return pidTarget(el.To)
	case aimName:
		return nameTarget(el.ToName)
	}
	return fnTarget(el.Fn)
}

// opOf is the operation an element of kind k is, as errors name it.
func opOf(k wire.Kind) string {
	switch k {
	case wire.KindSend:
		return "send"
	case wire.KindCast:
		return "cast"
	case wire.KindCall:
		return "call"
	case wire.KindRequest:
		return "request"
	}
	return "reply"
}

// fail is the error of d's element el for incarnation inc of its node,
// classed by reason (actor.NewError).
func (d *delivery) fail(el *wire.Element, inc uint64, reason error) error {
	return actor.NewError(opOf(el.Kind), d.node, inc, d.target(el).String(), reason)
}

// notCurrent is the error of a send or call pinned to an incarnation of
// d's node that is no longer the one a path reaches (inc).
func (d *delivery) notCurrent(el *wire.Element, inc uint64) error {
	return d.fail(el, d.inc, fmt.Errorf("%w: %s is now incarnation %016x", actor.ErrNoProcess, d.node, inc))
}
