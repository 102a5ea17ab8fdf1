package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/wire"
	"google.golang.org/protobuf/proto"
)

// sendTo is the transport's Send: fire and forget to a remote PID. On
// the first contact with a node it waits for the link (DialTimeout).
func (n *Node) sendTo(ctx context.Context, sender, to actor.PID, msg any) error {
	typ, pm, err := wire.PayloadOf(msg)
	if err != nil {
		n.stats.badMessages.Add(1)
		return actor.NewError("send", to.Node, to.Incarnation, to.String(), err)
	}
	el := wire.Element{Kind: wire.KindSend, To: to, Sender: sender, Type: typ, Msg: pm}
	sp := n.traceOut(ctx, to.Node, &el)
	err = n.oneWay("send", to.Node, to.Incarnation, pidTarget(to), sender, &el)
	if sp != nil {
		endSpan(sp, err)
	}
	return err
}

// sendNamed is the transport's SendNamed.
func (n *Node) sendNamed(ctx context.Context, sender actor.PID, node, name string, msg any) error {
	tg := nameTarget(name)
	typ, pm, err := wire.PayloadOf(msg)
	if err != nil {
		n.stats.badMessages.Add(1)
		return actor.NewError("send", node, 0, tg.String(), err)
	}
	el := wire.Element{Kind: wire.KindSend, ToName: name, Sender: sender, Type: typ, Msg: pm}
	sp := n.traceOut(ctx, node, &el)
	err = n.oneWay("send", node, 0, tg, sender, &el)
	if sp != nil {
		endSpan(sp, err)
	}
	return err
}

// cast is the transport's Cast.
func (n *Node) cast(ctx context.Context, sender actor.PID, node, fn string, arg proto.Message) error {
	typ, pm, err := wire.PayloadOf(arg)
	if err != nil {
		n.stats.badMessages.Add(1)
		return actor.NewError("cast", node, 0, fn, err)
	}
	el := wire.Element{Kind: wire.KindCast, Fn: fn, Type: typ, Msg: pm}
	sp := n.traceOut(ctx, node, &el)
	err = n.oneWay("cast", node, 0, fnTarget(fn), sender, &el)
	if sp != nil {
		endSpan(sp, err)
	}
	return err
}

// oneWay sends a send or cast element: through a pool when one is
// published for the node's current incarnation, else natively.
func (n *Node) oneWay(op, node string, wantInc uint64, tg target, sender actor.PID, el *wire.Element) error {
	block := n.cfg.SendPolicy == actor.Block
	var failed *pubPool // a pool that went away under us
	for {
		if pool := n.route(node); pool != nil && pool != failed {
			if wantInc != 0 && pool.inc != wantInc {
				return actor.NewError(op, node, wantInc, tg.String(), fmt.Errorf("%w: %s is now incarnation %016x", actor.ErrNoProcess, node, pool.inc))
			}
			err := pool.enqueue(pool.shard(senderKey(sender)), el, nil, false, nil, ownNever)
			if err == nil {
				n.stats.sendsPooled.Add(1)
				return nil
			}
			if !errors.Is(err, errPathClosed) {
				n.countBad(err)
				return actor.NewError(op, node, pool.inc, tg.String(), err)
			}
			failed = pool // fall back to the native path
		}
		p, l, err := n.connectBounded(node)
		if err != nil {
			return actor.NewError(op, node, wantInc, tg.String(), err)
		}
		if wantInc != 0 && p.inc != wantInc {
			return actor.NewError(op, node, wantInc, tg.String(), fmt.Errorf("%w: %s is now incarnation %016x", actor.ErrNoProcess, node, p.inc))
		}
		// A pool published meanwhile takes over (barrier.go).
		p.pathMu.RLock()
		if pool := n.route(node); pool != nil && pool != failed {
			p.pathMu.RUnlock()
			continue
		}
		_, err = l.enqueueEl(el, block, nil)
		p.pathMu.RUnlock()
		if err != nil {
			if retryFresh(l, err) {
				continue // closed for idleness meanwhile: a new link (idle.go)
			}
			if errors.Is(err, errLinkClosed) {
				err = actor.ErrNotSent
			}
			n.countBad(err)
			return actor.NewError(op, node, p.inc, tg.String(), err)
		}
		n.stats.sendsNative.Add(1)
		if n.nativeWatched.Load() {
			n.noteNative(p)
		}
		return nil
	}
}

// request is the transport's Request.
func (n *Node) request(ctx context.Context, sender, to actor.PID, msg any) (any, error) {
	typ, pm, err := wire.PayloadOf(msg)
	if err != nil {
		n.stats.badMessages.Add(1)
		return nil, actor.NewError("request", to.Node, to.Incarnation, to.String(), err)
	}
	el := wire.Element{Kind: wire.KindRequest, To: to, Sender: sender, Type: typ, Msg: pm}
	sp := n.traceOut(ctx, to.Node, &el)
	v, err := n.call(ctx, "request", to.Node, to.Incarnation, pidTarget(to), sender, &el)
	if sp != nil {
		endSpan(sp, err)
	}
	return v, err
}

// requestNamed is the transport's RequestNamed.
func (n *Node) requestNamed(ctx context.Context, sender actor.PID, node, name string, msg any) (any, error) {
	tg := nameTarget(name)
	typ, pm, err := wire.PayloadOf(msg)
	if err != nil {
		n.stats.badMessages.Add(1)
		return nil, actor.NewError("request", node, 0, tg.String(), err)
	}
	el := wire.Element{Kind: wire.KindRequest, ToName: name, Sender: sender, Type: typ, Msg: pm}
	sp := n.traceOut(ctx, node, &el)
	v, err := n.call(ctx, "request", node, 0, tg, sender, &el)
	if sp != nil {
		endSpan(sp, err)
	}
	return v, err
}

// callFn is the transport's Call.
func (n *Node) callFn(ctx context.Context, sender actor.PID, node, fn string, arg proto.Message) (proto.Message, error) {
	typ, pm, err := wire.PayloadOf(arg)
	if err != nil {
		n.stats.badMessages.Add(1)
		return nil, actor.NewError("call", node, 0, fn, err)
	}
	el := wire.Element{Kind: wire.KindCall, Fn: fn, Type: typ, Msg: pm}
	sp := n.traceOut(ctx, node, &el)
	v, err := n.call(ctx, "call", node, 0, fnTarget(fn), sender, &el)
	if sp != nil {
		endSpan(sp, err)
	}
	if err != nil {
		return nil, err
	}
	m, _ := v.(proto.Message)
	return m, nil
}

// call sends a call or request pinned to the node's current incarnation
// and waits for the reply, ctx, or liveness.
func (n *Node) call(ctx context.Context, op, node string, wantInc uint64, tg target, sender actor.PID, el *wire.Element) (any, error) {
	if d, ok := ctx.Deadline(); ok {
		el.Deadline = d.UnixNano()
	}
	el.ID = n.nextID.Add(1)
	pc := newPendingCall(op, tg, time.Now().UnixNano())
	var p *peer
	var failed *pubPool // a pool that went away under us
	for p == nil {
		if pool := n.route(node); pool != nil && pool != failed {
			p = pool.peer
			if wantInc != 0 && p.inc != wantInc {
				return nil, actor.NewError(op, node, wantInc, tg.String(), fmt.Errorf("%w: %s is now incarnation %016x", actor.ErrNoProcess, node, p.inc))
			}
			pc.via = pool
			ok, alone := p.addPending(el.ID, pc)
			if !ok {
				return nil, actor.NewError(op, node, p.inc, tg.String(), actor.ErrNotSent)
			}
			// A caller whose ctx can end must not wait in a write the
			// kernel holds (a peer that stopped reading): its proxy
			// writes. One whose ctx never ends waits for the reply or
			// liveness anyway, and may write its own call.
			own := ownNever
			switch {
			case ctx.Done() != nil:
			case alone:
				own = ownAlone
			default:
				own = ownCrowd
			}
			if err := pool.enqueue(pool.callShard(sender, el.ID), el, pc, false, nil, own); err != nil {
				if n.afterPoolRefused != nil {
					n.afterPoolRefused()
				}
				mine := p.takePending(el.ID) != nil
				if !errors.Is(err, errPathClosed) {
					n.countBad(err)
					return nil, actor.NewError(op, node, p.inc, tg.String(), err)
				}
				if !mine {
					// (fix) The pool's teardown settled the call while
					// its push waited (actor.ErrNotSent, told to the
					// caller by the answer it left): wait for that
					// answer, never send it again natively.
					continue
				}
				p, pc.via, failed = nil, nil, pool // take the native path
				continue
			}
			n.stats.callsPooled.Add(1)
			continue
		}
		np, l, err := n.connect(ctx, node)
		if err != nil {
			return nil, actor.NewError(op, node, wantInc, tg.String(), err)
		}
		if wantInc != 0 && np.inc != wantInc {
			return nil, actor.NewError(op, node, wantInc, tg.String(), fmt.Errorf("%w: %s is now incarnation %016x", actor.ErrNoProcess, node, np.inc))
		}
		// A pool published meanwhile takes over (barrier.go).
		np.pathMu.RLock()
		if pool := n.route(node); pool != nil && pool != failed {
			np.pathMu.RUnlock()
			continue
		}
		pc.via = l
		if ok, _ := np.addPending(el.ID, pc); !ok {
			np.pathMu.RUnlock()
			return nil, actor.NewError(op, node, np.inc, tg.String(), actor.ErrNotSent)
		}
		_, err = l.enqueueEl(el, true, &pc.seq)
		np.pathMu.RUnlock()
		if err != nil {
			np.takePending(el.ID)
			if retryFresh(l, err) {
				continue // closed for idleness meanwhile: a new link (idle.go)
			}
			if errors.Is(err, errLinkClosed) {
				err = actor.ErrNotSent
			}
			n.countBad(err)
			return nil, actor.NewError(op, node, np.inc, tg.String(), err)
		}
		n.stats.callsNative.Add(1)
		if n.nativeWatched.Load() {
			n.noteNative(np)
		}
		p = np
	}
	if pc.wait(ctx) {
		// Our ctx ended the wait: forget the call and cancel it there.
		p.takePending(el.ID)
		err := &actor.Error{Op: op, Node: node, Incarnation: p.inc, Target: tg.String(), Err: ctx.Err(), Outcome: actor.MayHaveExecuted}
		if pc.mayRun() {
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
		m, err := n.decode(lr.typ, lr.payload)
		if err != nil {
			return nil, &actor.Error{Op: op, Node: node, Incarnation: p.inc, Target: tg.String(), Err: fmt.Errorf("reply: %w", err), Outcome: actor.Executed}
		}
		return m, nil
	}
	return pc.res, nil
}

// countBad counts an outgoing message that could not be encoded (or was
// too large for a frame).
func (n *Node) countBad(err error) {
	if errors.Is(err, actor.ErrBadMessage) {
		n.stats.badMessages.Add(1)
	}
}

// sendCancel tells the incarnation that took the call to cancel it.
func (n *Node) sendCancel(p *peer, pc *pendingCall, id uint64) {
	el := &wire.Element{Kind: wire.KindCancel, ID: id}
	if l, _ := pc.via.(*link); l != nil && !l.isClosed() {
		if _, err := l.enqueueEl(el, false, nil); !retryFresh(l, err) {
			return
		}
	}
	p.sendCtl(el)
}

// watch is the transport's Watch.
func (n *Node) watch(watcher, target actor.PID) {
again:
	p, l, err := n.connectBounded(target.Node)
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
func (n *Node) unwatch(watcher, target actor.PID) {
	p := n.current(target.Node)
	if p == nil || p.inc != target.Incarnation {
		return
	}
	p.removeWatch(watcher, target)
	p.sendCtl(&wire.Element{Kind: wire.KindControl, Control: &wire.Control{Op: wire.CtlUnwatch, Watcher: watcher, Target: target}})
}

// notifyTerminated is the transport's NotifyTerminated: a local actor a
// remote watcher watched has ended.
func (n *Node) notifyTerminated(watcher, pid actor.PID, reason error) {
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
func (n *Node) current(node string) *peer {
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
