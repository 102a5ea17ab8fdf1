package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/wire"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"
)

// sendTo is the transport's Send: fire and forget to a remote PID. On
// the first contact with a node it waits for the link (DialTimeout).
func (n *transport) sendTo(ctx context.Context, sender, to actor.PID, msg any) error {
	el := wire.Element{Kind: wire.KindSend, To: to, Sender: sender}
	return n.oneWay(ctx, &delivery{
		aim: aimPID, node: to.Node, inc: to.Incarnation, key: senderKey(sender), root: sender.IsZero(),
	}, &el, msg)
}

// sendNamed is the transport's SendNamed.
func (n *transport) sendNamed(ctx context.Context, sender actor.PID, node, name string, msg any) error {
	el := wire.Element{Kind: wire.KindSend, ToName: name, Sender: sender}
	return n.oneWay(ctx, &delivery{
		aim: aimName, node: node, key: senderKey(sender), root: sender.IsZero(),
	}, &el, msg)
}

// cast is the transport's Cast.
func (n *transport) cast(ctx context.Context, sender actor.PID, node, fn string, arg proto.Message) error {
	el := wire.Element{Kind: wire.KindCast, Fn: fn}
	return n.oneWay(ctx, &delivery{
		aim: aimFn, node: node, key: senderKey(sender), root: sender.IsZero(),
	}, &el, arg)
}

// request is the transport's Request.
func (n *transport) request(ctx context.Context, sender, to actor.PID, msg any) (any, error) {
	el := wire.Element{Kind: wire.KindRequest, To: to, Sender: sender}
	return n.call(ctx, &delivery{
		kind: deliverCall, aim: aimPID, node: to.Node, inc: to.Incarnation, key: senderKey(sender), root: sender.IsZero(),
	}, &el, msg)
}

// requestNamed is the transport's RequestNamed.
func (n *transport) requestNamed(ctx context.Context, sender actor.PID, node, name string, msg any) (any, error) {
	el := wire.Element{Kind: wire.KindRequest, ToName: name, Sender: sender}
	return n.call(ctx, &delivery{
		kind: deliverCall, aim: aimName, node: node, key: senderKey(sender), root: sender.IsZero(),
	}, &el, msg)
}

// callFn is the transport's Call.
func (n *transport) callFn(ctx context.Context, sender actor.PID, node, fn string, arg proto.Message) (proto.Message, error) {
	el := wire.Element{Kind: wire.KindCall, Fn: fn}
	v, err := n.call(ctx, &delivery{
		kind: deliverCall, aim: aimFn, node: node, key: senderKey(sender), root: sender.IsZero(),
	}, &el, arg)
	if err != nil {
		return nil, err
	}
	m, _ := v.(proto.Message)
	return m, nil
}

// prepare is what every send, cast, call and request does before it
// goes: its payload (encoded by the path that takes it), and the trace
// and headers ctx carries; the span, if any, is ended by the caller.
func (n *transport) prepare(ctx context.Context, d *delivery, el *wire.Element, msg any) (trace.Span, error) {
	typ, pm, err := wire.PayloadOf(msg)
	if err != nil {
		n.stats.badMessages.Add(1)
		return nil, d.fail(el, d.inc, err)
	}
	el.Type, el.Msg = typ, pm
	return traceOut(ctx, n.node(), d.node, el), nil
}

// oneWay sends a send or cast.
func (n *transport) oneWay(ctx context.Context, d *delivery, el *wire.Element, msg any) error {
	sp, err := n.prepare(ctx, d, el, msg)
	if err != nil {
		return err
	}
	err = n.deliver(d, el)
	if sp != nil {
		endSpan(sp, err)
	}
	return err
}

// call sends a call or request pinned to the node's current incarnation
// and waits for the reply, ctx, or liveness: a delivery, and a wait.
func (n *transport) call(ctx context.Context, d *delivery, el *wire.Element, msg any) (any, error) {
	sp, err := n.prepare(ctx, d, el, msg)
	if err != nil {
		return nil, err
	}
	v, err := n.callAndWait(ctx, d, el)
	if sp != nil {
		endSpan(sp, err)
	}
	return v, err
}

// callAndWait numbers the call, delivers it pending, and waits: for its
// reply, for the failure of the path or incarnation that took it, or for
// ctx (the call is then cancelled there if it may still run).
func (n *transport) callAndWait(ctx context.Context, d *delivery, el *wire.Element) (any, error) {
	if dl, ok := ctx.Deadline(); ok {
		el.Deadline = dl.UnixNano()
	}
	el.ID = n.nextID.Add(1)
	pc := newPendingCall(opOf(el.Kind), d.target(el), time.Now().UnixNano())
	d.ctx, d.pc = ctx, pc
	if err := n.deliver(d, el); err != nil {
		return nil, err
	}
	p := d.p
	if pc.wait(ctx) {
		// Our ctx ended the wait: forget the call and cancel it there.
		p.takePending(el.ID)
		err := &actor.Error{Op: pc.op, Node: d.node, Incarnation: p.inc, Target: pc.tg.String(), Err: ctx.Err(), Outcome: actor.MayHaveExecuted}
		if pc.via.mayRun(pc) {
			n.sendCancel(p, pc, el.ID) // queued behind the call on the same link
		} else {
			err.Outcome = actor.NotExecuted
		}
		return nil, err
	}
	if pc.err != nil {
		return nil, pc.err
	}
	if lr := pc.large; lr != nil {
		m, err := decode(n.node(), lr.typ, lr.payload)
		if err != nil {
			return nil, &actor.Error{Op: pc.op, Node: d.node, Incarnation: p.inc, Target: pc.tg.String(), Err: fmt.Errorf("reply: %w", err), Outcome: actor.Executed}
		}
		return m, nil
	}
	return pc.res, nil
}

// routeFor is the pool-or-native decision, the one every send, cast,
// call, request and reply makes: the pool published for d's node, or nil
// for the native path. A pool that refused d already (refused: it was
// torn down) is passed over. A reply goes into a pool only if the pool
// belongs to the incarnation that made the call (the incarnation guard);
// else it is diverted to the native path, which reaches that incarnation
// or nothing. A send or call pinned to an incarnation the pool is not
// for fails in pushPooled (ErrNoProcess), as it does natively.
func (n *transport) routeFor(d *delivery, refused *pubPool) *pubPool {
	pool := (*host)(n).route(d.node)
	if pool == nil || pool == refused {
		return nil
	}
	if d.kind == deliverReply && pool.inc != d.inc {
		n.stats.guardDiverted.Add(1)
		return nil
	}
	return pool
}

// deliver carries el to d's peer: through the pool routeFor picks, else
// natively; a pool torn down under it sends d on to the native path
// (never twice: see pushPooled). On success d.p is the incarnation that
// took it (a call's reply comes from there). For sends and calls the
// error is an *actor.Error with its class; for replies, an error wrapping
// actor.ErrBadMessage says the reply cannot be encoded, any other that
// no path took it.
func (n *transport) deliver(d *delivery, el *wire.Element) error {
	var refused *pubPool
	for {
		if pool := n.routeFor(d, refused); pool != nil {
			if done, err := n.pushPooled(pool, d, el); done {
				return err
			}
			refused = pool
		}
		if d.kind == deliverReply {
			return n.replyNative(d, el)
		}
		if done, err := n.pushNative(d, el, refused); done {
			return err
		}
	}
}

// pushPooled pushes d into pool; done false means the pool refused it
// and d goes on to the native path.
func (n *transport) pushPooled(pool *pubPool, d *delivery, el *wire.Element) (done bool, err error) {
	p := pool.peer
	if d.kind != deliverReply && d.inc != 0 && pool.inc != d.inc {
		return true, d.notCurrent(el, pool.inc)
	}
	if d.kind == deliverCall {
		d.pc.via = pool
		ok, alone := p.addPending(el.ID, d.pc)
		if !ok {
			return true, d.fail(el, p.inc, actor.ErrNotSent)
		}
		d.alone = alone
	}
	// The proxy its shard names: a sender keeps one proxy (its order),
	// the root handle's calls take them in turn, a reply goes by call id,
	// past the queue's bounds (it must not wait). Written here, not in a
	// method of the pool: a frame less on a reply's stack (see sendReply).
	switch d.kind {
	case deliverReply:
		err = pool.enqueue(pool.shard(el.ID), el, nil, true, d.t, d.replyOwn())
	case deliverCall:
		err = pool.enqueue(pool.callShard(d.root, d.key, el.ID), el, d.pc, false, nil, d.callOwn())
	default:
		err = pool.enqueue(pool.shard(d.key), el, nil, false, nil, ownNever)
	}
	if err == nil {
		d.p = p
		switch d.kind {
		case deliverOneWay:
			n.stats.sendsPooled.Add(1)
		case deliverCall:
			n.stats.callsPooled.Add(1)
		case deliverReply:
			pool.stats.Replies.Add(1)
			n.stats.repliesPooled.Add(1)
		}
		return true, nil
	}
	return n.poolRefused(pool, d, el, err)
}

// poolRefused settles a push that pool refused with err: done false sends
// d on to the native path. Apart from pushPooled, whose frame every
// message's stack carries.
func (n *transport) poolRefused(pool *pubPool, d *delivery, el *wire.Element, err error) (done bool, _ error) {
	switch d.kind {
	case deliverReply:
		// A reply must reach its caller: any refusal but an answer that
		// cannot travel sends it on natively.
		if errors.Is(err, actor.ErrBadMessage) {
			return true, err
		}
		return false, nil
	case deliverCall:
		if n.afterPoolRefused != nil {
			n.afterPoolRefused()
		}
		mine := pool.peer.takePending(el.ID) != nil
		if errors.Is(err, errPathClosed) && !mine {
			// (fix) The pool's teardown settled the call while its push
			// waited (actor.ErrNotSent, told to the caller by the answer
			// it left): wait for that answer, never send it again
			// natively.
			d.p = pool.peer
			return true, nil
		}
	}
	if !errors.Is(err, errPathClosed) {
		n.countBad(err)
		return true, d.fail(el, pool.inc, err)
	}
	return false, nil
}

// pushNative pushes a send or call on the native link to d's node,
// dialled if need be; done false means it is to be routed again (a pool
// was published meanwhile, or the link closed for idleness).
func (n *transport) pushNative(d *delivery, el *wire.Element, refused *pubPool) (done bool, err error) {
	var p *peer
	var l *link
	if d.kind == deliverCall {
		p, l, err = n.node().dial.connect(d.ctx, d.node)
	} else {
		p, l, err = n.node().dial.connectBounded(d.node)
	}
	if err != nil {
		return true, d.fail(el, d.inc, err)
	}
	if d.inc != 0 && p.inc != d.inc {
		return true, d.notCurrent(el, p.inc)
	}
	// A pool published meanwhile takes over (barrier.go).
	p.pathMu.RLock()
	if n.routeFor(d, refused) != nil {
		p.pathMu.RUnlock()
		return false, nil
	}
	if d.kind == deliverCall {
		d.pc.via = l
		if ok, _ := p.addPending(el.ID, d.pc); !ok {
			p.pathMu.RUnlock()
			return true, d.fail(el, p.inc, actor.ErrNotSent)
		}
	}
	err = l.push(d, el)
	p.pathMu.RUnlock()
	if err != nil {
		if d.kind == deliverCall {
			p.takePending(el.ID)
		}
		if retryFresh(l, err) {
			return false, nil // closed for idleness meanwhile: a new link (idle.go)
		}
		if errors.Is(err, errLinkClosed) {
			err = actor.ErrNotSent
		}
		n.countBad(err)
		return true, d.fail(el, p.inc, err)
	}
	if d.kind == deliverCall {
		n.stats.callsNative.Add(1)
	} else {
		n.stats.sendsNative.Add(1)
	}
	if n.nativeWatched.Load() {
		p.noteNative()
	}
	d.p = p
	return true, nil
}

// replyNative pushes a reply on the link its call came on, else on
// another live link of the caller's incarnation. Handed on, the call's
// admission ticket is given back.
func (n *transport) replyNative(d *delivery, el *wire.Element) error {
	l := d.from
	var err error = errLinkClosed
	if !l.isClosed() {
		if err = l.push(d, el); err == nil {
			n.stats.repliesNative.Add(1)
			d.t.release()
			return nil
		}
		if errors.Is(err, actor.ErrBadMessage) {
			return err
		}
	}
	if alt := l.peer.anyLink(); alt != nil {
		if err = alt.push(d, el); err == nil {
			n.stats.repliesNative.Add(1)
			d.t.release()
			return nil
		}
	}
	return err
}

// countBad counts an outgoing message that could not be encoded (or was
// too large for a frame).
func (n *transport) countBad(err error) {
	if errors.Is(err, actor.ErrBadMessage) {
		n.stats.badMessages.Add(1)
	}
}

// sendCancel tells the incarnation that took the call to cancel it.
func (n *transport) sendCancel(p *peer, pc *pendingCall, id uint64) {
	el := &wire.Element{Kind: wire.KindCancel, ID: id}
	if !pc.via.cancelCall(el) {
		p.sendCtl(el)
	}
}

// watch is the transport's Watch.
func (n *transport) watch(watcher, target actor.PID) {
again:
	p, l, err := n.node().dial.connectBounded(target.Node)
	if err != nil {
		actorhooks.NotifyTerminated(n.sys, watcher, target, actor.NewError("watch", target.Node, target.Incarnation, target.String(), err))
		return
	}
	if p.inc != target.Incarnation {
		actorhooks.NotifyTerminated(n.sys, watcher, target, actor.NewError("watch", target.Node, target.Incarnation, target.String(), actor.ErrNoProcess))
		return
	}
	if !p.addWatch(watcher, target) {
		actorhooks.NotifyTerminated(n.sys, watcher, target, actor.NewError("watch", target.Node, target.Incarnation, target.String(), actor.ErrNodeDown))
		return
	}
	el := wire.Element{Kind: wire.KindControl, Control: &wire.Control{Op: wire.CtlWatch, Watcher: watcher, Target: target}}
	if _, err := l.enqueueEl(&el, true, nil); err != nil {
		p.removeWatch(watcher, target)
		if retryFresh(l, err) {
			goto again // closed for idleness meanwhile: a new link (idle.go)
		}
		actorhooks.NotifyTerminated(n.sys, watcher, target, actor.NewError("watch", target.Node, target.Incarnation, target.String(), actor.ErrNodeDown))
	}
}

// unwatch is the transport's Unwatch.
func (n *transport) unwatch(watcher, target actor.PID) {
	p := n.current(target.Node)
	if p == nil || p.inc != target.Incarnation {
		return
	}
	p.removeWatch(watcher, target)
	p.sendCtl(&wire.Element{Kind: wire.KindControl, Control: &wire.Control{Op: wire.CtlUnwatch, Watcher: watcher, Target: target}})
}

// notifyTerminated is the transport's NotifyTerminated: a local actor a
// remote watcher watched has ended.
func (n *transport) notifyTerminated(watcher, pid actor.PID, reason error) {
	p := n.current(watcher.Node)
	if p == nil || p.inc != watcher.Incarnation {
		return // the watcher's incarnation is gone; it learned of it there
	}
	c := &wire.Control{Op: wire.CtlTerminated, Watcher: watcher, Target: pid}
	if reason != nil {
		el := wire.Element{}
		wire.ErrorReply(&el, reason)
		c.Status, c.Code, c.Message = el.Status, el.Code, el.Message
	}
	p.sendCtl(&wire.Element{Kind: wire.KindControl, Control: c})
}

// current is the live incarnation of node, or nil.
func (n *transport) current(node string) *peer {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s := n.slots[node]; s != nil {
		return s.cur
	}
	return nil
}

// target names what an operation was aimed at; it is only turned into text
// when an error needs it (the hot path never formats).
type target struct {
	kind byte // 'p' pid, 'n' name, 'f' function
	pid  actor.PID
	s    string
}

func pidTarget(p actor.PID) target  { return target{kind: 'p', pid: p} }
func nameTarget(name string) target { return target{kind: 'n', s: name} }
func fnTarget(fn string) target     { return target{kind: 'f', s: fn} }

func (t target) String() string {
	switch t.kind {
	case 'p':
		return t.pid.String()
	case 'n':
		return fmt.Sprintf("name %q", t.s)
	}
	return t.s
}
