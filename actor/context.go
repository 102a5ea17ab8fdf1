package actor

import (
	"context"
	"log/slog"

	"google.golang.org/protobuf/proto"
)

// Context is what an actor sees while it handles a message. It is valid
// only during Receive, on the actor's own goroutine; do not keep it.
type Context struct {
	proc *process
	env  *envelope
	// tr is the handled message's trace (trace.go), or nil: a pointer,
	// so that a process (which holds its Context) keeps its size class.
	tr *traced
}

// Self is the actor's own PID.
func (c *Context) Self() PID { return c.proc.pid }

// Parent is the PID of the actor that spawned this one; zero for a
// top-level actor.
func (c *Context) Parent() PID {
	if c.proc.parent == nil {
		return PID{}
	}
	return c.proc.parent.pid
}

// Name is the name the actor is registered under, or "".
func (c *Context) Name() string { return c.proc.name }

// Message is the message being handled.
func (c *Context) Message() any {
	if c.env == nil {
		return nil
	}
	return c.env.msg
}

// Sender is the PID of the actor that sent the message, or zero when it
// came from outside any actor.
func (c *Context) Sender() PID {
	if c.env == nil {
		return PID{}
	}
	return c.env.sender
}

// System is the node the actor runs on.
func (c *Context) System() *System { return c.proc.sys }

// Logger is the system logger with this actor's PID attached.
func (c *Context) Logger() *slog.Logger { return c.proc.sys.log.With("pid", c.proc.pid.String()) }

// Respond answers the message being handled: it completes the caller's
// Request, or, for a plain Send from an actor, sends msg back to it. Only
// the first answer to a request counts.
func (c *Context) Respond(msg any) { c.proc.sys.respond(c.proc.pid, c.env, msg, nil) }

// RespondError answers the request being handled with err: the caller's
// Request returns a rejection, *RemoteError wrapping err (executed), or an
// *Error with the outcome err states (NotExecutedError,
// MayHaveExecutedError, an error from a request or call this actor made;
// see Handler).
func (c *Context) RespondError(err error) { c.proc.sys.respond(c.proc.pid, c.env, nil, err) }

// wrapReply replaces the Replier of the request being handled with
// wrap(it) (actorhooks.WrapReply); false when it is not a request.
func (c *Context) wrapReply(wrap func(Replier) Replier) bool {
	if c.env == nil || c.env.reply == nil {
		return false
	}
	c.env.reply = wrap(c.env.reply)
	return true
}

// Defer detaches the request being handled so it can be answered later,
// from any goroutine, with the returned Replier: its Reply(msg, nil) is
// Respond(msg), its Reply(nil, err) is RespondError(err). Nil when the
// message is not a request. If the actor dies before it answers, the
// caller gets ErrNoProcess, may have executed.
func (c *Context) Defer() Replier {
	if c.env == nil || c.env.reply == nil {
		return nil
	}
	r := c.proc.unanswered.add(c.env.reply, c.proc.sys, c.proc.pid)
	c.env.reply = nil
	return r
}

// Context is the trace of the message being handled: for a message from
// another node that carried one, the span of its receipt (or, with no
// TracerProvider on this node, the caller's span context); for a
// message from this node sent with a span in its ctx (Request,
// SendContext, or from a handler of a traced message), that span. Spans
// started from it continue the caller's trace. It holds nothing else (no
// deadline, no other value of the sender's ctx); without a trace it is
// context.Background(). Send, Cast, Request and Call from this Context
// continue the trace by themselves (a Request or Call's own ctx wins
// when it holds a span).
func (c *Context) Context() context.Context {
	if c.tr == nil {
		return context.Background()
	}
	return c.tr.ctx
}

// Send sends msg to pid with this actor as the sender.
func (c *Context) Send(to PID, msg any) {
	c.proc.sys.sendVia(c.proc.sendMW(), c.traceCtx(), c.proc.pid, to, msg)
}

// SendNamed sends msg to the actor registered as name on node, with this
// actor as the sender.
func (c *Context) SendNamed(node, name string, msg any) {
	c.proc.sys.sendNamedVia(c.proc.sendMW(), c.traceCtx(), c.proc.pid, node, name, msg)
}

// Request sends msg to pid and waits for its answer. It blocks this actor
// until then: RequestAsync does not (the answer comes as a message).
func (c *Context) Request(ctx context.Context, to PID, msg any) (any, error) {
	return c.proc.sys.requestVia(c.proc.sendMW(), c.continueTrace(ctx), c.proc.pid, to, msg)
}

// RequestNamed is Request to the actor registered as name on node ("" is
// this node).
func (c *Context) RequestNamed(ctx context.Context, node, name string, msg any) (any, error) {
	return c.proc.sys.requestNamedVia(c.proc.sendMW(), c.continueTrace(ctx), c.proc.pid, node, name, msg)
}

// Call runs function fn on node with this actor as the caller (so one
// actor's calls to a node keep their order through a proxy pool). It
// blocks this actor until the result.
func (c *Context) Call(ctx context.Context, node, fn string, arg proto.Message) (proto.Message, error) {
	return c.proc.sys.callVia(c.proc.sendMW(), c.continueTrace(ctx), c.proc.pid, node, fn, arg)
}

// Cast runs fn on node without waiting, with this actor as the caller.
func (c *Context) Cast(node, fn string, arg proto.Message) {
	c.proc.sys.castVia(c.proc.sendMW(), c.traceCtx(), c.proc.pid, node, fn, arg)
}

// Spawn starts a child actor. Its Started runs before Spawn returns. The
// parent receives Terminated when the child ends (implicit watch), and a
// stopping parent stops its children first.
func (c *Context) Spawn(props *Props) (PID, error) { return c.proc.sys.spawn(c.proc, props, "") }

// SpawnNamed starts a child registered under name.
func (c *Context) SpawnNamed(props *Props, name string) (PID, error) {
	return c.proc.sys.spawn(c.proc, props, name)
}

// SpawnFunc starts a child from a plain function.
func (c *Context) SpawnFunc(f ReceiveFunc) (PID, error) {
	return c.proc.sys.spawn(c.proc, PropsFromFunc(f), "")
}

// Children are the live children, in no particular order.
func (c *Context) Children() []PID {
	out := make([]PID, 0, len(c.proc.children))
	for _, ch := range c.proc.children {
		out = append(out, ch.pid)
	}
	return out
}

// Watch asks for a Terminated message when pid ends. If pid is already
// gone the Terminated (reason ErrNoProcess) comes at once. For a remote
// pid, the loss of its node incarnation ends it with ErrNodeDown.
func (c *Context) Watch(pid PID) {
	p := c.proc
	if pid == p.pid {
		return
	}
	if _, ok := p.children[pid.ID]; ok && pid.Node == p.pid.Node && pid.Incarnation == p.pid.Incarnation {
		return // children are watched implicitly
	}
	if p.watching == nil {
		p.watching = make(map[PID]struct{})
	}
	if _, ok := p.watching[pid]; ok {
		return
	}
	p.watching[pid] = struct{}{}
	p.sys.watch(p.pid, pid)
}

// Unwatch cancels Watch. A Terminated already queued for pid is dropped.
func (c *Context) Unwatch(pid PID) {
	p := c.proc
	if _, ok := p.watching[pid]; !ok {
		return
	}
	delete(p.watching, pid)
	p.sys.unwatch(p.pid, pid)
}

// Exit ends this actor, after the current message, with reason: like
// Stop, but its parent and watchers see Terminated{Reason: reason}. A nil
// reason is a normal stop. It still receives Stopping and Stopped.
func (c *Context) Exit(reason error) {
	c.proc.pushSys(sysStop{reason: reason})
}

// Stop stops pid (this actor, a child, or any local actor): it receives
// Stopping, its children stop, it receives Stopped. Stopping oneself takes
// effect after the current message.
func (c *Context) Stop(pid PID) {
	if pid == c.proc.pid {
		c.proc.pushSys(sysStop{}) // handled right after this message
		return
	}
	c.proc.sys.StopActor(pid)
}
