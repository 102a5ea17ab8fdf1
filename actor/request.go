package actor

import (
	"context"
	"fmt"

	"github.com/mailroom-go/mailroom/internal/future"
)

// Replier completes one request: Context.Defer returns one, to answer a
// request later. Reply(msg, nil) is Context.Respond(msg); Reply(nil, err)
// is Context.RespondError(err): the caller gets a rejection (*RemoteError,
// executed) or the outcome err states (see Handler), exactly as if the
// actor had answered while handling the message. The first call to Reply
// wins; later ones are dropped and counted as late replies
// (System.LateReplies). Safe from any goroutine.
type Replier interface {
	Reply(msg any, err error)
}

// newFuture returns a future whose late replies s counts
// (actorhooks.NewFuture).
func (s *System) newFuture() *future.Future { return future.New(&s.late) }

// LateReplies counts replies that arrived after their request had already
// ended (cancelled, failed by liveness, or answered twice).
func (s *System) LateReplies() uint64 { return s.late.Load() }

func (s *System) request(ctx context.Context, sender, to PID, msg any) (any, error) {
	v, err := s.requestOnce(ctx, sender, to, msg)
	if err != nil {
		s.countFailure(err)
	}
	return v, err
}

func (s *System) requestOnce(ctx context.Context, sender, to PID, msg any) (any, error) {
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
	v, err := s.requestNamedOnce(ctx, sender, node, name, msg)
	if err != nil {
		s.countFailure(err)
	}
	return v, err
}

func (s *System) requestNamedOnce(ctx context.Context, sender PID, node, name string, msg any) (any, error) {
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
	f := s.newFuture()
	if err := p.deliver(ctx, envelope{msg: withTrace(msg, ctx), sender: sender, reply: f}); err != nil {
		return nil, NewError("request", s.name, s.inc, target, err)
	}
	v, err, ok := f.Wait(ctx, p.mb.doneChan())
	if ok {
		return v, err
	}
	reason := ctx.Err()
	if reason == nil {
		// The actor is gone: queued requests were answered before its
		// mailbox closed, so it took ours and died without answering.
		reason = ErrNoProcess
	}
	return nil, &Error{Op: "request", Node: s.name, Incarnation: s.inc, Target: target, Err: reason, Outcome: MayHaveExecuted}
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
			err = s.handlerError("request", self.String(), err)
		}
		r.Reply(msg, err)
	case !env.sender.IsZero() && err == nil:
		s.send(context.Background(), self, env.sender, msg)
	default:
		s.deadLetter(env.sender, self, msg, fmt.Errorf("nobody to respond to: %w", ErrNoProcess))
	}
}
