package actor

import (
	"errors"
	"fmt"
	"strings"
)

// Execution says whether the work behind a failed operation ran. Outcome
// computes it from an error.
type Execution int

const (
	// Executed: the callee ran the work; the error is its answer (a
	// rejection or a panic), or err is nil.
	Executed Execution = iota
	// NotExecuted: the work never started; retrying is safe.
	NotExecuted
	// MayHaveExecuted: the work may or may not have run; check before retrying
	// anything that is not idempotent.
	MayHaveExecuted
)

// String is the outcome in words, for people: "executed", "not executed"
// or "may have executed". Label is the same words as a label value.
func (o Execution) String() string {
	switch o {
	case Executed:
		return "executed"
	case NotExecuted:
		return "not executed"
	case MayHaveExecuted:
		return "may have executed"
	}
	return fmt.Sprintf("Execution(%d)", int(o))
}

// Label is the outcome as a label or attribute value: "executed",
// "not_executed" or "may_have_executed" (String's words joined by
// underscores). It is the one form mailroom's telemetry uses: the outcome
// label of the metrics (mailroom_call_failures_total, and services'
// results), the mailroom.outcome attribute of spans, and the observer's
// counters; match on it, not on String.
func (o Execution) Label() string {
	if o < Executed || o > MayHaveExecuted {
		return fmt.Sprintf("execution_%d", int(o))
	}
	return strings.ReplaceAll(o.String(), " ", "_")
}

// Outcome classifies err: the first error in its chain (errors.As order)
// that carries an outcome decides. An *Error or an *OutcomeError reports
// the outcome it holds, a *RemoteError or *PanicError is Executed. An
// error with none of these is classified by the sentinel it wraps (each
// sentinel's doc gives its outcome), a context error (context.Canceled,
// context.DeadlineExceeded) is MayHaveExecuted, and so is anything unknown:
// the only safe reading. nil is Executed.
//
// Outcome and errors.Is never disagree: an error whose outcome is not a
// sentinel's own (say, an *OutcomeError declaring MayHaveExecuted over a
// downstream ErrUnreachable) does not match that sentinel with errors.Is.
// ErrNoProcess and ErrBadMessage name a reason whose outcome varies
// (their docs say when); ask Outcome for them.
func Outcome(err error) Execution {
	if err == nil {
		return Executed
	}
	if o, ok := classify(err); ok {
		return o
	}
	return MayHaveExecuted
}

// outcomer is implemented by the errors that carry an outcome.
type outcomer interface {
	error
	outcome() Execution
}

func (e *Error) outcome() Execution        { return e.Outcome }
func (e *OutcomeError) outcome() Execution { return e.Outcome }
func (e *RemoteError) outcome() Execution  { return Executed }
func (e *PanicError) outcome() Execution   { return Executed }

// classify is the outcome err states, and false when it states none (no
// outcome-carrying error, no sentinel, no context error in its chain).
func classify(err error) (Execution, bool) {
	var o outcomer
	if errors.As(err, &o) {
		return o.outcome(), true
	}
	for i := range sentinels {
		if errors.Is(err, sentinels[i].err) {
			return sentinels[i].outcome, true
		}
	}
	return 0, false
}

// sentinelOutcome is the default outcome of a reason when an *Error is
// built from it (NewError).
func sentinelOutcome(err error) Execution {
	if o, ok := classify(err); ok {
		return o
	}
	return MayHaveExecuted
}

// OutcomeError is a handler's error that declares its outcome: a handler
// (a registered function, or an actor answering a request) returns one to
// tell its caller more than "rejected". Build one with NotExecutedError or
// MayHaveExecutedError.
//
// It hides from errors.Is and errors.As what in Err would contradict it:
// the sentinels documented with another outcome (MayHaveExecutedError over
// a downstream ErrUnreachable does not match ErrUnreachable) and an
// *Error, *RemoteError or *PanicError of another outcome. Everything else
// in Err (your own errors, codes, context errors) stays visible. Err is
// the error as the handler gave it.
type OutcomeError struct {
	Outcome Execution
	Err     error
}

// NotExecutedError declares that the handler did nothing that needs
// undoing: its caller gets err with outcome NotExecuted, safe to retry,
// and the services layer retries it by itself. nil gives nil.
func NotExecutedError(err error) error {
	if err == nil {
		return nil
	}
	return &OutcomeError{Outcome: NotExecuted, Err: err}
}

// MayHaveExecutedError declares that the handler may have done part of
// the work before it failed (it wrote something, then a downstream call
// failed): its caller gets err with outcome MayHaveExecuted, to check
// before retrying. nil gives nil.
func MayHaveExecutedError(err error) error {
	if err == nil {
		return nil
	}
	return &OutcomeError{Outcome: MayHaveExecuted, Err: err}
}

func (e *OutcomeError) Error() string {
	return trimAdvice(strings.TrimPrefix(e.Err.Error(), "mailroom: ")) + ": " + e.Outcome.advice()
}

// Is matches what Err matches, except a sentinel whose own outcome is
// not e.Outcome.
func (e *OutcomeError) Is(target error) bool {
	if o, fixed := fixedOutcome(target); fixed && o != e.Outcome {
		return false
	}
	return errors.Is(e.Err, target)
}

// As finds in Err what errors.As would, except an *Error, *RemoteError
// or *PanicError whose outcome is not e.Outcome.
func (e *OutcomeError) As(target any) bool {
	switch t := target.(type) {
	case **Error:
		var x *Error
		if errors.As(e.Err, &x) && x.Outcome == e.Outcome {
			*t = x
			return true
		}
		return false
	case **RemoteError, **PanicError:
		if e.Outcome != Executed {
			return false
		}
	}
	return errors.As(e.Err, target)
}

// handlerError is what a handler's error (a function's, or a request's
// answer: RespondError, a deferred Reply) becomes for its caller: a
// rejection, *RemoteError, unless err states another outcome (it is a
// declaration, a mailroom error from a call the handler made, or wraps a
// sentinel or a context error), then an *Error with that outcome. So an
// error returned as-is keeps its outcome from hop to hop, and a handler
// that gave up because its ctx ended is MayHaveExecuted, whichever
// side's clock fired first.
func (s *System) handlerError(op, target string, err error) error {
	o, stated := classify(err)
	if !stated || o == Executed {
		return &RemoteError{Op: op, Node: s.name, Incarnation: s.inc, Target: target, Code: ErrorCode(err), Message: err.Error(), Err: err}
	}
	return &Error{Op: op, Node: s.name, Incarnation: s.inc, Target: target, Err: err, Outcome: o}
}

// advice is what an outcome means for the caller, appended to error texts.
func (o Execution) advice() string {
	switch o {
	case NotExecuted:
		return "not executed; safe to retry"
	case MayHaveExecuted:
		return "may have executed; check before retrying"
	}
	return "executed"
}

// trimAdvice removes what an inner error's text already says about its
// outcome at its end, so that the text it is wrapped into says one outcome,
// the wrapper's. Only the text changes: outcomes are carried by values.
func trimAdvice(s string) string {
	for {
		t := s
		for _, o := range [...]Execution{NotExecuted, MayHaveExecuted, Executed} {
			t = strings.TrimSuffix(t, ": "+o.advice())
		}
		if t == s {
			return s
		}
		s = t
	}
}
