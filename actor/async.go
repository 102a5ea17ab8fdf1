package actor

import (
	"context"

	"google.golang.org/protobuf/proto"
)

// Non-blocking requests. RequestAsync, RequestNamedAsync and CallAsync
// send as Request, RequestNamed and Call do, with the same outcomes and
// deadlines (ctx bounds the wait, liveness ends it when the target's node
// goes), but return at once: the actor goes on with its mailbox, and
// when the answer comes its continuation runs on the actor's own
// goroutine, as a message in its mailbox (it is never refused by the
// mailbox's bound: the actor asked for it). The continuation gets the
// actor's Context, as Receive does (its Message is nil, its Sender
// zero: the answer is the continuation's). A continuation of an actor that has
// ended (stopped, crashed, restarted: a restart is a new instance) is
// dropped and counted (System.DroppedContinuations). One goroutine waits
// for each outstanding request, ended by the answer, ctx or liveness.

// Continuation is what runs with the answer of an asynchronous request.
type Continuation func(c *Context, reply any, err error)

// continuation is an answer on its way to the actor that asked.
type continuation struct {
	then  Continuation
	reply any
	err   error
}

// RequestAsync is Request without blocking this actor: then runs, on
// this actor's goroutine, with the answer.
func (c *Context) RequestAsync(ctx context.Context, to PID, msg any, then Continuation) {
	p, f, ctx := c.proc, c.proc.sendMW(), c.continueTrace(ctx)
	go func() {
		v, err := p.sys.requestVia(f, ctx, p.pid, to, msg)
		p.continueWith(then, v, err)
	}()
}

// RequestNamedAsync is RequestNamed without blocking this actor.
func (c *Context) RequestNamedAsync(ctx context.Context, node, name string, msg any, then Continuation) {
	p, f, ctx := c.proc, c.proc.sendMW(), c.continueTrace(ctx)
	go func() {
		v, err := p.sys.requestNamedVia(f, ctx, p.pid, node, name, msg)
		p.continueWith(then, v, err)
	}()
}

// CallAsync is Call without blocking this actor: then's reply is the
// function's result (a proto.Message) or nil.
func (c *Context) CallAsync(ctx context.Context, node, fn string, arg proto.Message, then Continuation) {
	p, f, ctx := c.proc, c.proc.sendMW(), c.continueTrace(ctx)
	go func() {
		v, err := p.sys.callVia(f, ctx, p.pid, node, fn, arg)
		var reply any
		if v != nil {
			reply = v
		}
		p.continueWith(then, reply, err)
	}()
}

// PipeTo requests msg of to without blocking this actor and sends the
// answer to dest as a message, with this actor as its sender: the reply
// itself, or, when the request failed, a RequestFailed (a local dest
// only: for one on another node the failure is a counted dead letter).
func (c *Context) PipeTo(ctx context.Context, to PID, msg any, dest PID) {
	p, f, ctx := c.proc, c.proc.sendMW(), c.continueTrace(ctx)
	go func() {
		v, err := p.sys.requestVia(f, ctx, p.pid, to, msg)
		if err != nil {
			if dest.Node != p.sys.name {
				p.sys.deadLetter(dest, p.pid, msg, err)
				return
			}
			v = RequestFailed{To: to, Err: err}
		}
		p.sys.send(context.Background(), p.pid, dest, v)
	}()
}

// RequestFailed is what PipeTo delivers when its request failed: Err has
// the outcome a blocking Request would have returned.
type RequestFailed struct {
	To  PID
	Err error
}

// continueWith queues then's run for this actor, or counts it dropped
// when the actor is gone.
func (p *process) continueWith(then Continuation, v any, err error) {
	if p.sys.inject(p.pid, &continuation{then: then, reply: v, err: err}) != nil {
		p.sys.counters.droppedConts.Add(1)
	}
}

// DroppedContinuations counts the continuations of asynchronous requests
// (RequestAsync, RequestNamedAsync, CallAsync) dropped because their actor
// had ended when the answer came.
func (s *System) DroppedContinuations() uint64 { return s.counters.droppedConts.Load() }

// runContinuation runs m on the actor's goroutine, a panic a crash as in
// Receive.
func (p *process) runContinuation(m *continuation) {
	env := &envelope{} // Message is nil: the answer is then's
	defer func() {
		if v := recover(); v != nil {
			p.ctx.env = nil
			p.crash(v, env)
		}
	}()
	p.ctx.env = env
	m.then(&p.ctx, m.reply, m.err)
	p.ctx.env = nil
}
