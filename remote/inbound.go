package remote

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/wire"
	"go.opentelemetry.io/otel/trace"
)

// errGoodbye closes a link whose peer said goodbye.
var errGoodbye = errors.New("remote: peer said goodbye")

// dispatch handles one frame from l. An error closes l (bad input from
// that peer); the node keeps serving every other link.
func (l *link) dispatch(k wire.Kind, body []byte) error {
	n := l.node
	l.lone = true
	if k == wire.KindBatch {
		it, err := l.ends.NewBatchIter(body)
		if err != nil {
			return l.badInput(err)
		}
		l.lone = it.Left == 1
		var el wire.Element
		for {
			ok, err := it.Next(&el)
			if err != nil {
				l.flushRun() // what came before the bad entry is delivered
				return l.badInput(err)
			}
			if !ok {
				l.flushRun()
				return nil
			}
			if el.Kind == wire.KindSend && !carries(&el) {
				l.addSend(&el) // sendrun.go
				continue
			}
			l.flushRun()
			if err := l.handle(&el); err != nil {
				return err
			}
		}
	}
	if k == wire.KindControl && len(body) > n.cfg.Limits.MaxAnnounceBytes && wire.ControlOp(body[0]) == wire.CtlAnnounce {
		l.refuseAnnounce(len(body)) // prune.go; never decoded
		return nil
	}
	var el wire.Element
	if err := l.ends.DecodeBody(k, body, &el); err != nil {
		return l.badInput(err)
	}
	return l.handle(&el)
}

func (l *link) badInput(err error) error {
	l.node.stats.badFrames.Add(1)
	return fmt.Errorf("bad input: %w", err)
}

func (l *link) handle(el *wire.Element) error {
	switch el.Kind {
	case wire.KindSend:
		l.inSend(el)
	case wire.KindCast:
		l.inCast(el)
	case wire.KindCall:
		l.inCall(el)
	case wire.KindRequest:
		l.inRequest(el)
	case wire.KindReply:
		l.inReply(el)
	case wire.KindCancel:
		l.peer.running.cancel(el.ID)
	case wire.KindPing:
		// Never dropped: a pong says every frame before the ping was
		// handled (a sender's ordering barrier, barrier.go). It takes the
		// control headroom, and waits only past it.
		_, _ = l.enqueueCtl(pongFrame, true, nil)
	case wire.KindPong:
		l.onPong()
	case wire.KindControl:
		l.inControl(el.Control)
	case wire.KindGoodbye:
		l.onGoodbye(el)
		return errGoodbye
	}
	return nil
}

// tooLarge refuses a payload over MaxMessageSize before anything decodes
// it (a small frame of packed varints can decode into many times its
// size): the element is refused, counted (TooLarge; the caller counts it
// in BadMessages too), and the link stays up.
func tooLarge(n *Node, el *wire.Element) error {
	if len(el.Payload) <= n.cfg.Limits.MaxMessageSize {
		return nil
	}
	n.stats.tooLarge.Add(1)
	return fmt.Errorf("%w: %s of %d bytes exceeds MaxMessageSize %d", actor.ErrBadMessage, el.Kind, len(el.Payload), n.cfg.Limits.MaxMessageSize)
}

// payloadCost is what el's payload costs its peer's admission: what it
// decodes into, estimated from its type's schema (wire.Codecs.Cost). An
// error refuses it before it is decoded: an unregistered type, or a
// payload that would decode into more than wire.DecodeFactor times its
// size.
func payloadCost(n *Node, el *wire.Element) (int64, error) {
	c, err := n.codecs.Cost(n.types, el.Type, el.Payload)
	return int64(c), err
}

// admit waits for room in the admission of l's peer (admission.go);
// false when l closed or the incarnation left meanwhile. A link that
// closed, or whose incarnation is gone, runs nothing more of what its
// reader still holds (its callers have failed those calls with the link
// already; its casts become dead letters).
func (l *link) admit(size int64) bool {
	p := l.peer
	select {
	case <-l.closedCh:
		return false
	case <-p.ctx.Done():
		return false
	default:
	}
	return p.adm.acquire(size, l.closedCh, p.ctx.Done(), &l.admitWait, &l.node.stats.admissionWaits)
}

func (l *link) inSend(el *wire.Element) {
	if carries(el) {
		l.inTracedSend(el)
		return
	}
	l.addSend(el)
	l.flushRun()
}

// inTracedSend delivers a send that carried a trace on its own (never in
// a run: its handler's context is its own), under a consumer span that
// ends once it is queued.
func (l *link) inTracedSend(el *wire.Element) {
	n := l.node
	n.stats.received.Add(1)
	err := tooLarge(n, el) // never decoded (inbound.go)
	var msg any
	if err == nil {
		msg, err = decode(n, el.Type, el.Payload)
	}
	if err != nil {
		l.dropSend(el, err)
		return
	}
	tc, sp := traceIn(context.Background(), n, l.ends.PeerNode, el)
	l.dispatching.Store(true) // as in flushRun
	err = actorhooks.DeliverTraced(n.sys, l.ctx, tc, el.Sender, el.To, el.ToName, msg, nil)
	l.dispatching.Store(false)
	endSpan(sp, err)
	if err != nil {
		actorhooks.DeadLetter(n.sys, sendTarget(n, el.To, el.ToName), el.Sender, msg, err)
		return
	}
	n.stats.delivered.Add(1)
}

// inCast runs a cast once its peer's admission has room, under the
// peer's context: cancelled when the incarnation is gone.
func (l *link) inCast(el *wire.Element) {
	n := l.node
	n.stats.received.Add(1)
	p := l.peer
	self := actor.PID{Node: n.sys.Name(), Incarnation: n.sys.Incarnation()}
	if err := tooLarge(n, el); err != nil {
		n.stats.badMessages.Add(1)
		actorhooks.DeadLetter(n.sys, self, actor.PID{}, el.Type, fmt.Errorf("cast %q: %w", el.Fn, err))
		return
	}
	size, err := payloadCost(n, el)
	if err != nil {
		n.stats.badMessages.Add(1)
		actorhooks.DeadLetter(n.sys, self, actor.PID{}, el.Type, fmt.Errorf("cast %q: %w", el.Fn, err))
		return
	}
	if !l.admit(size) {
		actorhooks.DeadLetter(n.sys, self, actor.PID{}, el.Type, fmt.Errorf("cast %q from %s: %w: its link closed while it waited for admission", el.Fn, p.name, actor.ErrOverloaded))
		return
	}
	msg, err := decode(n, el.Type, el.Payload)
	if err != nil {
		p.adm.release(size)
		n.stats.badMessages.Add(1)
		actorhooks.DeadLetter(n.sys, self, actor.PID{}, el.Type, fmt.Errorf("cast %q: %w", el.Fn, err))
		return
	}
	ctx, done := p.ctx, func() { p.adm.release(size) }
	if carries(el) {
		var sp trace.Span
		ctx, sp = traceIn(p.ctx, n, l.ends.PeerNode, el)
		if sp != nil {
			done = func() { p.adm.release(size); sp.End() }
		}
	}
	if actorhooks.CastLocal(n.sys, ctx, el.Fn, msg, done) {
		n.stats.delivered.Add(1)
	}
}

// refuse answers a call or request that will not run.
func (l *link) refuse(id uint64, op, target string, reason error) {
	n := l.node
	l.sendReply(id, nil, actor.NewError(op, n.sys.Name(), n.sys.Incarnation(), target, reason), nil)
}

// inCall runs a call once its peer's admission has room (admission.go);
// its ticket is given back when the reply has been handed on.
func (l *link) inCall(el *wire.Element) {
	n := l.node
	n.stats.received.Add(1)
	p, id, fn := l.peer, el.ID, el.Fn
	if err := tooLarge(n, el); err != nil {
		n.stats.badMessages.Add(1)
		l.refuse(id, "call", fn, err)
		return
	}
	h, ok := actorhooks.Function(n.sys, fn)
	switch {
	case !ok:
		l.refuse(id, "call", fn, actor.ErrNoFunction)
		return
	case el.Deadline != 0 && time.Now().UnixNano() >= el.Deadline:
		l.refuse(id, "call", fn, actor.ErrDeadlineExceeded)
		return
	}
	size, err := payloadCost(n, el)
	if err != nil {
		n.stats.badMessages.Add(1)
		l.refuse(id, "call", fn, err)
		return
	}
	if !l.admit(size) {
		// Its link closed or its incarnation left while it waited: the
		// caller has failed it with the link; nothing ran.
		return
	}
	msg, err := decode(n, el.Type, el.Payload)
	if err != nil {
		p.adm.release(size)
		n.stats.badMessages.Add(1)
		l.refuse(id, "call", fn, err)
		return
	}
	// Admission and the drain meet under the node lock: once Drain has
	// begun, no call starts (it is refused: not executed) and the
	// shutdown's wait for running calls cannot race a late Add.
	if !n.admitCall() {
		p.adm.release(size)
		l.refuse(id, "call", fn, actor.ErrDraining)
		return
	}
	c := l.newInboundCall(id, fn, h, msg, size, el.Deadline)
	if !p.running.track(c) {
		n.running.Done()
		p.adm.release(size)
		return // the caller's incarnation is gone: nobody to answer
	}
	if carries(el) {
		tr := &inTrace{}
		tr.ctx, tr.span = traceIn(context.Background(), n, l.ends.PeerNode, el)
		c.ctx.tr = tr
	}
	l.owed.Add(1)
	c.ctr = n.runningByFn.counter(fn)
	c.ctr.Add(1)
	n.stats.delivered.Add(1)
	if l.lone {
		l.inline = c // alone in its frame: this goroutine runs it (reader.go)
		return
	}
	n.workers.run(c)
}

func (l *link) inRequest(el *wire.Element) {
	n := l.node
	n.stats.received.Add(1)
	target := el.To.String()
	if el.ToName != "" {
		target = fmt.Sprintf("name %q", el.ToName)
	}
	if err := tooLarge(n, el); err != nil {
		n.stats.badMessages.Add(1)
		l.refuse(el.ID, "request", target, err)
		return
	}
	msg, err := decode(n, el.Type, el.Payload)
	if err != nil {
		n.stats.badMessages.Add(1)
		l.refuse(el.ID, "request", target, err)
		return
	}
	if el.Deadline != 0 && time.Now().UnixNano() >= el.Deadline {
		l.refuse(el.ID, "request", target, actor.ErrDeadlineExceeded)
		return
	}
	if n.isDraining() {
		l.refuse(el.ID, "request", target, actor.ErrDraining)
		return
	}
	l.owed.Add(1)
	r := &remoteReplier{n: n, l: l, id: el.ID}
	var replier actor.Replier = r
	l.dispatching.Store(true) // as in inSend
	if carries(el) {
		tr := &tracedReplier{remoteReplier: r}
		var tc context.Context
		tc, tr.span = traceIn(context.Background(), n, l.ends.PeerNode, el)
		replier = tr
		err = actorhooks.DeliverTraced(n.sys, l.ctx, tc, el.Sender, el.To, el.ToName, msg, tr)
	} else if el.ToName != "" {
		err = actorhooks.DeliverNamed(n.sys, l.ctx, el.Sender, el.ToName, msg, r)
	} else {
		err = actorhooks.DeliverLocal(n.sys, l.ctx, el.Sender, el.To, msg, r)
	}
	l.dispatching.Store(false)
	if err != nil {
		replier.Reply(nil, actor.NewError("request", n.sys.Name(), n.sys.Incarnation(), target, err))
		return
	}
	n.stats.delivered.Add(1)
}

// onGoodbye settles what was pending on l: after a clean goodbye every
// call the peer took from l has been answered on l already, so those still
// pending were never taken (not executed); otherwise they may have run.
// The incarnation is gone when its last link ends.
func (l *link) onGoodbye(el *wire.Element) {
	p := l.peer
	// From now on nothing new goes to this peer: the link refuses writes,
	// and connect reports the peer as leaving.
	l.st.MarkGoodbye(el.Clean)
	p.mu.Lock()
	p.markLeavingLocked()
	p.mu.Unlock()
	reason := fmt.Errorf("%s left: %s", p.name, el.Reason)
	if failed := p.failOnLink(l, el.Clean, reason); failed > 0 {
		l.node.stats.failedByLiveness.Add(uint64(failed))
	}
}

// admitCall counts a call as running unless the node is draining.
func (n *Node) admitCall() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.draining {
		return false
	}
	n.running.Add(1)
	return true
}

// remoteReplier answers a remote request once.
type remoteReplier struct {
	n    *Node
	l    *link
	id   uint64
	done atomic.Bool
}

func (r *remoteReplier) Reply(msg any, err error) { r.reply(msg, err) }

// reply answers, if nobody has; it reports whether it did.
func (r *remoteReplier) reply(msg any, err error) bool {
	if !r.done.CompareAndSwap(false, true) {
		return false
	}
	r.l.sendReply(r.id, msg, err, nil)
	r.l.owed.Add(-1)
	return true
}

// tracedReplier answers a request that carried a trace, and ends its
// server span (nil: none) with the answer: a type of its own, so that an
// untraced request's replier stays small.
type tracedReplier struct {
	*remoteReplier
	span trace.Span
}

func (r *tracedReplier) Reply(msg any, err error) {
	if r.reply(msg, err) {
		endSpan(r.span, err)
	}
}

// Completed lets the actor core prune answered requests.
func (r *remoteReplier) Completed() bool { return r.done.Load() }

// sendReply encodes and routes a reply to the caller's incarnation (the
// peer of l): through its pool when one is published for exactly that
// incarnation, else on l itself; if both are gone it is a dead letter.
// t, the call's admission ticket (nil for requests and refusals), is
// given back once the reply is handed on: with the batch that carries it
// through a pool, or here.
func (l *link) sendReply(id uint64, msg any, err error, t *ticket) {
	n := l.node
	el := wire.Element{Kind: wire.KindReply, ID: id}
	if err != nil {
		wire.ErrorReply(&el, err)
	} else if typ, pm, perr := wire.PayloadOf(msg); perr != nil {
		badReply(n, &el, perr)
	} else {
		el.Type, el.Msg = typ, pm // encoded in place by the path that takes it
	}
	p := l.peer
	var d delivery // assigned field by field: a literal is built aside and copied (a larger frame)
	d.kind, d.node, d.inc, d.from, d.t = deliverReply, p.name, p.inc, l, t
	err = (*transport)(n).deliver(&d, &el)
	if errors.Is(err, actor.ErrBadMessage) && el.Msg != nil {
		// The answer itself cannot travel (it does not encode, or it is
		// larger than a frame or MaxMessageSize): the caller learns that
		// instead.
		el = wire.Element{Kind: wire.KindReply, ID: id}
		badReply(n, &el, err)
		err = (*transport)(n).deliver(&d, &el)
	}
	if err == nil {
		return
	}
	t.release()
	replyLost(n, p, id, msg)
}

// replyLost makes a reply no path took a counted dead letter. Apart from
// sendReply so that the frame of every reply stays small (workers' stacks
// grow past it: copystack was a tenth of a pooled callee's CPU).
func replyLost(n *Node, p *peer, id uint64, msg any) {
	n.stats.repliesDropped.Add(1)
	actorhooks.DeadLetter(n.sys, actor.PID{Node: p.name, Incarnation: p.inc}, actor.PID{}, msg, fmt.Errorf("reply %d: %w: caller incarnation %016x unreachable", id, actor.ErrNodeDown, p.inc))
}

// badReply makes el the error reply for an answer that could not travel.
func badReply(n *Node, el *wire.Element, err error) {
	n.stats.badMessages.Add(1)
	wire.ErrorReply(el, actor.NewError("reply", n.sys.Name(), n.sys.Incarnation(), "", err))
	el.Code += wire.MayHaveSuffix // it ran; only its answer could not travel
}

func (l *link) inReply(el *wire.Element) {
	n := l.node
	pc := l.peer.takePending(el.ID)
	if pc == nil || !pc.done.CompareAndSwap(false, true) {
		// Its call had ended (failed, or its caller gave up).
		n.stats.lateReplies.Add(1)
		return
	}
	p := l.peer
	switch {
	case len(el.Payload) > n.cfg.Limits.MaxMessageSize:
		// Never copied nor decoded: the caller learns it ran, and why its
		// answer is refused.
		n.stats.tooLarge.Add(1)
		n.stats.badMessages.Add(1)
		pc.err = &actor.Error{Op: pc.op, Node: p.name, Incarnation: p.inc, Target: pc.tg.String(), Outcome: actor.Executed,
			Err: fmt.Errorf("reply: %w: a result of %d bytes exceeds MaxMessageSize %d", actor.ErrBadMessage, len(el.Payload), n.cfg.Limits.MaxMessageSize)}
	case el.Status != wire.StatusOK:
		pc.err = wire.ReplyError(el, pc.op, p.name, p.inc, pc.tg.String())
	case len(el.Payload) <= replyDecodeInline:
		if m, err := decode(n, el.Type, el.Payload); err != nil {
			pc.err = &actor.Error{Op: pc.op, Node: p.name, Incarnation: p.inc, Target: pc.tg.String(), Err: fmt.Errorf("reply: %w", err), Outcome: actor.Executed}
		} else {
			pc.res = m
		}
	default:
		pc.large = &largeReply{typ: el.Type, payload: append([]byte(nil), el.Payload...)}
	}
	pc.signal <- struct{}{}
}

func (l *link) inControl(c *wire.Control) {
	n := l.node
	switch c.Op {
	case wire.CtlFence:
		l.peer.fencedLost(c.Links) // lostreply.go
		l.awaitFenced(c.Links)
	case wire.CtlIdleClose:
		l.onIdleClose() // idle.go
	case wire.CtlWatch:
		l.peer.inWatch(c.Watcher, c.Target) // prune.go: bounded per peer
	case wire.CtlUnwatch:
		l.peer.inUnwatch(c.Watcher, c.Target)
	case wire.CtlTerminated:
		l.peer.removeWatch(c.Watcher, c.Target)
		var reason error
		if c.Status != wire.StatusOK || c.Code != "" {
			el := wire.Element{Status: c.Status, Code: c.Code, Message: c.Message}
			reason = wire.ReplyError(&el, "actor", l.peer.name, l.peer.inc, c.Target.String())
		}
		actorhooks.NotifyTerminated(n.sys, c.Watcher, c.Target, reason)
	case wire.CtlAnnounce:
		l.peer.setAnnounce(c.Draining, c.Meta)
		n.each(func(h *Hooks) {
			if h.OnAnnounce != nil {
				h.OnAnnounce(l.peer.info(), c.Draining, c.Meta)
			}
		})
	}
}
