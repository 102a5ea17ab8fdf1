package actor

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"google.golang.org/protobuf/proto"
)

// Handler is a registered function. ctx carries the caller's deadline
// and is cancelled when the caller gives up. What the caller gets for the
// handler's error depends on what the error states (Outcome):
//
//   - a plain error, or one made with Reject: a rejection, *RemoteError,
//     executed; Reject's code travels with it;
//   - NotExecutedError(err) or MayHaveExecutedError(err): an *Error with
//     that outcome, the handler's node and function, and err's code;
//   - an error from a mailroom call the handler made, returned as-is or
//     wrapped with %w: the same outcome again, one hop further (stock
//     never ran it: the caller of orders is told "not executed"); a
//     handler that did work of its own before that call failed says so
//     with MayHaveExecutedError;
//   - ctx.Err() (or an error wrapping it) once ctx has ended: an *Error,
//     MayHaveExecuted, matching context.DeadlineExceeded or
//     context.Canceled: the same outcome and error the caller gets when
//     its own ctx ends first, so the answer does not depend on which
//     clock fired first. A handler sure it has done nothing yet may
//     return NotExecutedError(ctx.Err()); a caller whose own ctx ended
//     first still reads MayHaveExecuted, all it can know.
//
// A panic becomes a *PanicError (executed). A call whose deadline passed
// before the handler started is not run: ErrDeadlineExceeded, not
// executed.
type Handler func(ctx context.Context, arg proto.Message) (proto.Message, error)

// Register makes h callable as name on this node, by Call and Cast from
// here or from any node linked to this one. Registering a taken name is
// an error; Unregister first to replace.
func (s *System) Register(name string, h Handler) error {
	if name == "" || h == nil {
		return fmt.Errorf("mailroom: register: want a name and a handler")
	}
	s.fnMu.Lock()
	defer s.fnMu.Unlock()
	cur := *s.fns.Load()
	if _, ok := cur[name]; ok {
		return fmt.Errorf("mailroom: register function %q: %w", name, ErrNameTaken)
	}
	next := make(map[string]Handler, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	next[name] = h
	s.fns.Store(&next)
	return nil
}

// Unregister removes the function name.
func (s *System) Unregister(name string) {
	s.fnMu.Lock()
	defer s.fnMu.Unlock()
	cur := *s.fns.Load()
	if _, ok := cur[name]; !ok {
		return
	}
	next := make(map[string]Handler, len(cur))
	for k, v := range cur {
		if k != name {
			next[k] = v
		}
	}
	s.fns.Store(&next)
}

// function returns the handler registered as name.
func (s *System) function(name string) (Handler, bool) {
	h, ok := (*s.fns.Load())[name]
	return h, ok
}

// Call runs the function fn registered on node with arg and returns its
// result. There is no default timeout: it ends with the result, when ctx
// ends, or when the node incarnation that took the call leaves
// (ErrNodeDown). A ctx deadline travels with the call; the callee does not
// start work whose deadline has passed (ErrDeadlineExceeded, not executed).
// Calls through the System's own methods need no order between them and
// spread over every proxy of a proxy pool (see Request).
func (s *System) Call(ctx context.Context, node, fn string, arg proto.Message) (proto.Message, error) {
	return s.callVia(s.sendMW, ctx, PID{}, node, fn, arg)
}

func (s *System) call(ctx context.Context, sender PID, node, fn string, arg proto.Message) (proto.Message, error) {
	v, err := s.callOnce(ctx, sender, node, fn, arg)
	if err != nil {
		s.countFailure(err)
	}
	return v, err
}

func (s *System) callOnce(ctx context.Context, sender PID, node, fn string, arg proto.Message) (proto.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: "call", Node: node, Target: fn, Err: err, Outcome: NotExecuted}
	}
	if node != s.name && node != "" {
		r := s.transport()
		if r == nil {
			return nil, NewError("call", node, 0, fn, ErrUnreachable)
		}
		return r.Call(ctx, sender, node, fn, arg)
	}
	h, ok := s.function(fn)
	if !ok {
		return nil, NewError("call", s.name, s.inc, fn, ErrNoFunction)
	}
	if s.stopping.Load() {
		return nil, NewError("call", s.name, s.inc, fn, ErrStopped)
	}
	if ctx.Done() == nil {
		return s.runHandler(ctx, "call", fn, h, arg)
	}
	type result struct {
		msg proto.Message
		err error
	}
	res := make(chan result, 1)
	if !s.addWork() {
		return nil, NewError("call", s.name, s.inc, fn, ErrStopped)
	}
	go func() {
		defer s.work.Done()
		v, err := s.runHandler(ctx, "call", fn, h, arg)
		res <- result{v, err}
	}()
	select {
	case r := <-res:
		return r.msg, r.err
	case <-ctx.Done():
		return nil, &Error{Op: "call", Node: s.name, Incarnation: s.inc, Target: fn, Err: ctx.Err(), Outcome: MayHaveExecuted}
	}
}

// Cast runs fn on node with arg and does not wait. A cast that cannot be
// delivered (no such function, node unreachable) is a dead letter; a
// rejection or panic of the function is logged and counted (CastFailures).
func (s *System) Cast(node, fn string, arg proto.Message) {
	s.castVia(s.sendMW, context.Background(), PID{}, node, fn, arg)
}

// CastContext is Cast carrying ctx's trace, as SendContext: the function
// runs with a context that continues it. ctx's values only: it bounds
// nothing, and its end does not cancel the function.
func (s *System) CastContext(ctx context.Context, node, fn string, arg proto.Message) {
	s.castVia(s.sendMW, ctx, PID{}, node, fn, arg)
}

func (s *System) cast(ctx context.Context, sender PID, node, fn string, arg proto.Message) {
	if node != s.name && node != "" {
		r := s.transport()
		if r == nil {
			s.deadLetter(PID{Node: node}, PID{}, arg, fmt.Errorf("cast %q: %w", fn, ErrUnreachable))
			return
		}
		if err := r.Cast(ctx, sender, node, fn, arg); err != nil {
			s.deadLetter(PID{Node: node}, PID{}, arg, err)
		}
		return
	}
	base := context.Background()
	if tc := traceOnly(ctx); tc != nil {
		base = tc
	}
	if h := HeadersFrom(ctx); h != nil {
		base = WithHeaders(base, h) // the function reads them (HeadersFrom)
	}
	s.castLocal(base, fn, arg, nil)
}

// castLocal runs the local function fn in its own goroutine, with ctx as
// its context. done, when not nil, is called once the cast has ended, or
// at once when it does not start (no such function, the system stops:
// a dead letter). It reports whether the function started.
// actorhooks.CastLocal: a transport replays a remote cast.
func (s *System) castLocal(ctx context.Context, fn string, arg proto.Message, done func()) bool {
	h, ok := s.function(fn)
	if !ok {
		s.deadLetter(PID{Node: s.name, Incarnation: s.inc}, PID{}, arg, fmt.Errorf("cast %q: %w", fn, ErrNoFunction))
		if done != nil {
			done()
		}
		return false
	}
	if !s.addWork() {
		s.deadLetter(PID{Node: s.name, Incarnation: s.inc}, PID{}, arg, fmt.Errorf("cast %q: %w", fn, ErrStopped))
		if done != nil {
			done()
		}
		return false
	}
	go func() {
		defer s.work.Done()
		if done != nil {
			defer done()
		}
		if _, err := s.runHandler(ctx, "cast", fn, h, arg); err != nil {
			s.castFails.Add(1)
			s.log.Debug("cast failed", "function", fn, "err", err)
		}
	}()
	return true
}

// addWork counts a function run for Stop to wait for, unless the system
// is stopping: the check and the count meet under workMu, so Stop's wait
// never races a late Add.
func (s *System) addWork() bool {
	s.workMu.Lock()
	defer s.workMu.Unlock()
	if s.stopping.Load() {
		return false
	}
	s.work.Add(1)
	return true
}

// CastFailures counts casts whose function returned an error or panicked.
func (s *System) CastFailures() uint64 { return s.castFails.Load() }

// runHandler runs h once on the calling goroutine, turning its error into
// what its caller gets (handlerError) and a panic into a *PanicError, and
// skipping it (not executed) when ctx's deadline has already passed
// (actorhooks.RunHandler).
func (s *System) runHandler(ctx context.Context, op, fn string, h Handler, arg proto.Message) (res proto.Message, err error) {
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return nil, NewError(op, s.name, s.inc, fn, ErrDeadlineExceeded)
	}
	defer func() {
		if v := recover(); v != nil {
			pe := &PanicError{Op: op, Node: s.name, Target: fn, Value: v, Stack: debug.Stack()}
			s.log.Error("function panicked", "function", fn, "panic", fmt.Sprint(v), "stack", string(pe.Stack))
			res, err = nil, pe
		}
	}()
	res, err = h(ctx, arg)
	if err != nil {
		return nil, s.handlerError(op, fn, err)
	}
	return res, nil
}

// RegisterTypes adds message types to the system's type registry so they
// can be decoded when they arrive from other nodes. Registering a type
// twice is not an error.
func (s *System) RegisterTypes(msgs ...proto.Message) error {
	for _, m := range msgs {
		mt := m.ProtoReflect().Type()
		if _, err := s.cfg.Types.FindMessageByName(mt.Descriptor().FullName()); err == nil {
			continue
		}
		if err := s.cfg.Types.RegisterMessage(mt); err != nil {
			return fmt.Errorf("mailroom: register type %s: %w", mt.Descriptor().FullName(), err)
		}
	}
	return nil
}
