package actor

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Replier completes one request. The first call to Reply wins; later ones
// are dropped and counted as late replies. Safe from any goroutine.
type Replier interface {
	Reply(msg any, err error)
}

// Future is a Replier a caller waits on. Transports use it for requests
// and calls they carry; it is exported for them.
type Future struct {
	ch   chan futureResult
	done atomic.Bool
	sys  *System
}

type futureResult struct {
	msg any
	err error
}

// NewFuture returns a Future whose late replies s counts.
func (s *System) NewFuture() *Future {
	return &Future{ch: make(chan futureResult, 1), sys: s}
}

// Reply completes the future once.
func (f *Future) Reply(msg any, err error) {
	if f.done.CompareAndSwap(false, true) {
		f.ch <- futureResult{msg, err}
		return
	}
	f.sys.late.Add(1)
}

// Completed reports whether the future has been completed (answered or
// claimed).
func (f *Future) Completed() bool { return f.done.Load() }

// Claim completes the future from the waiting side (ctx ended, liveness
// failed). It reports false when a reply already won; read it with Result.
func (f *Future) Claim() bool { return f.done.CompareAndSwap(false, true) }

// Result blocks for the reply; use after Claim returned false.
func (f *Future) Result() (any, error) {
	r := <-f.ch
	return r.msg, r.err
}

// Wait blocks until the reply or ctx ends. On ctx end it returns an *Error
// for op/target with outcome o and ctx's error as the reason.
func (f *Future) Wait(ctx context.Context, op, node string, inc uint64, target string, o Execution) (any, error) {
	select {
	case r := <-f.ch:
		return r.msg, r.err
	case <-ctx.Done():
		if f.Claim() {
			return nil, &Error{Op: op, Node: node, Incarnation: inc, Target: target, Err: ctx.Err(), Outcome: o}
		}
		return f.Result()
	}
}

// LateReplies counts replies that arrived after their request had already
// ended (cancelled, failed by liveness, or answered twice).
func (s *System) LateReplies() uint64 { return s.late.Load() }

func (s *System) request(ctx context.Context, sender, to PID, msg any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: "request", Node: to.Node, Incarnation: to.Incarnation, Target: to.String(), Err: err, Outcome: NotExecuted}
	}
	if to.Node != s.name {
		r := s.transport()
		if r == nil {
			return nil, NewError("request", to.Node, to.Incarnation, to.String(), ErrUnreachable)
		}
		return r.Request(ctx, sender, to, msg)
	}
	p := s.local(to)
	if p == nil {
		return nil, NewError("request", s.name, to.Incarnation, to.String(), ErrNoProcess)
	}
	return s.requestLocal(ctx, p, sender, msg, to.String())
}

func (s *System) requestNamed(ctx context.Context, sender PID, node, name string, msg any) (any, error) {
	target := fmt.Sprintf("name %q", name)
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: "request", Node: node, Target: target, Err: err, Outcome: NotExecuted}
	}
	if node != s.name && node != "" {
		r := s.transport()
		if r == nil {
			return nil, NewError("request", node, 0, target, ErrUnreachable)
		}
		return r.RequestNamed(ctx, sender, node, name, msg)
	}
	p := s.names.get(name)
	if p == nil {
		return nil, NewError("request", s.name, s.inc, target, ErrNoProcess)
	}
	return s.requestLocal(ctx, p, sender, msg, target)
}

func (s *System) requestLocal(ctx context.Context, p *process, sender PID, msg any, target string) (any, error) {
	f := s.NewFuture()
	if err := p.deliver(ctx, envelope{msg: msg, sender: sender, reply: f}); err != nil {
		return nil, NewError("request", s.name, s.inc, target, err)
	}
	done := p.mb.doneChan()
	select {
	case r := <-f.ch:
		return r.msg, r.err
	case <-ctx.Done():
		if f.Claim() {
			return nil, &Error{Op: "request", Node: s.name, Incarnation: s.inc, Target: target, Err: ctx.Err(), Outcome: MayHaveExecuted}
		}
		return f.Result()
	case <-done:
		// Queued requests were answered before done closed; if ours was
		// not, the actor took it and died without answering.
		if f.Claim() {
			return nil, &Error{Op: "request", Node: s.name, Incarnation: s.inc, Target: target, Err: ErrNoProcess, Outcome: MayHaveExecuted}
		}
		return f.Result()
	}
}

// respond answers the request in env (or the sender, for a plain send).
func (s *System) respond(self PID, env *envelope, msg any, err error) {
	switch {
	case env == nil:
		s.deadLetter(PID{}, self, msg, fmt.Errorf("respond outside a message: %w", ErrNoProcess))
	case env.reply != nil:
		r := env.reply
		env.reply = nil
		if err != nil {
			err = &RemoteError{Op: "request", Node: s.name, Incarnation: s.inc, Target: self.String(), Code: ErrorCode(err), Message: err.Error(), Err: err}
		}
		r.Reply(msg, err)
	case !env.sender.IsZero() && err == nil:
		s.send(self, env.sender, msg)
	default:
		s.deadLetter(env.sender, self, msg, fmt.Errorf("nobody to respond to: %w", ErrNoProcess))
	}
}
