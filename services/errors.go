package services

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/actor"
)

// ErrStopped: the services layer of this node has stopped. Wraps
// actor.ErrStopped (not executed).
var ErrStopped = fmt.Errorf("services: stopped: %w", actor.ErrStopped)

// LookupError is a failed resolution: nothing was sent, so the call did
// not execute. Err is actor.ErrNoService, actor.ErrNoVersion,
// actor.ErrNoFunction or actor.ErrDraining; errors.Is and actor.Outcome
// (NotExecuted) work on it.
type LookupError struct {
	Service  string
	Want     Constraint
	Function string
	Err      error
	// Seen lists what the registry did find ("2.1.0 on search-a
	// (incarnation ...)"), for the message.
	Seen []string
}

func (e *LookupError) Error() string {
	return fmt.Sprintf("services: lookup %s %s function %s: %s", e.Service, e.Want, e.Function, e.detail())
}

// detail is the message without the lookup's own prefix.
func (e *LookupError) detail() string {
	var b strings.Builder
	switch {
	case errors.Is(e.Err, actor.ErrNoService):
		b.WriteString("no such service: no node announces it (provider down, not started yet, withdrawn, or in another cluster)")
	case errors.Is(e.Err, actor.ErrNoVersion):
		b.WriteString("no compatible version: providers have " + strings.Join(e.Seen, "; "))
	case errors.Is(e.Err, actor.ErrNoFunction):
		b.WriteString("no such function in any compatible provider: " + strings.Join(e.Seen, "; "))
	case errors.Is(e.Err, actor.ErrDraining):
		b.WriteString("every compatible provider is draining for a stop: " + strings.Join(e.Seen, "; "))
	default:
		b.WriteString(e.Err.Error())
	}
	b.WriteString(": not executed; safe to retry")
	return b.String()
}

func (e *LookupError) Unwrap() error { return e.Err }

// Reason says why a call stopped trying.
type Reason int

const (
	// ReasonExecuted: the provider ran the call and answered with an
	// error (a rejection or a panic). Never retried.
	ReasonExecuted Reason = iota + 1
	// ReasonNotIdempotent: the attempt may have executed and the function
	// is not declared idempotent. Check before retrying.
	ReasonNotIdempotent
	// ReasonBudget: the retry budget ends before the next attempt would
	// start.
	ReasonBudget
	// ReasonAttempts: RetryPolicy.MaxAttempts attempts were made.
	ReasonAttempts
	// ReasonContext: the caller's ctx ended.
	ReasonContext
	// ReasonStopped: this node's services layer stopped.
	ReasonStopped
	// ReasonPermanent: the failure cannot go away by retrying (the
	// argument cannot be encoded or decoded).
	ReasonPermanent
	// ReasonUnsettled: the attempt may have executed, the function runs
	// keyed calls under a guard and the call carried a key, but the
	// provider's Status of the key did not settle it: the record was lost
	// with the incarnation (in-memory store), the attempt was
	// interrupted by the provider's death (durable store), or the
	// provider did not answer within the budget. Check before retrying.
	ReasonUnsettled
)

func (r Reason) String() string {
	switch r {
	case ReasonExecuted:
		return "not retried: the provider ran it"
	case ReasonNotIdempotent:
		return "not retried: the function is not idempotent"
	case ReasonBudget:
		return "stopped: retry budget used up"
	case ReasonAttempts:
		return "stopped: max attempts reached"
	case ReasonContext:
		return "stopped: the caller's ctx ended"
	case ReasonStopped:
		return "stopped: this node's services stopped"
	case ReasonPermanent:
		return "not retried: the argument cannot travel"
	case ReasonUnsettled:
		return "not retried: the idempotency key's status did not settle it"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Attempt is one try of a call.
type Attempt struct {
	Start       time.Time // on the services Clock
	Node        string    // "" when the lookup failed
	Incarnation uint64
	Version     Version
	Err         error
}

// CallError is a failed service call: every attempt with its start time,
// provider and error, why it stopped, and the last error, which it wraps
// (errors.Is, errors.As and actor.Outcome see through it). When an
// earlier attempt may have executed and the last did not, Err is the last
// error under actor.MayHaveExecutedError, so actor.Outcome reports the
// whole call and errors.Is no longer matches the last error's
// not-executed sentinel (the attempts keep every error as it was).
type CallError struct {
	Service  string
	Want     Constraint
	Function string
	// Node, Incarnation and Version: the provider of the last attempt
	// ("" when its lookup failed).
	Node        string
	Incarnation uint64
	Version     Version
	Attempts    []Attempt
	Reason      Reason
	Budget      time.Duration // the budget in effect
	Err         error         // the last attempt's error
	CtxErr      error         // ctx.Err() when the caller's ctx ended it
}

func (e *CallError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "services: call %s %s function %s", e.Service, e.Want, e.Function)
	if e.Node != "" {
		fmt.Fprintf(&b, " on node %s (incarnation %016x, version %s)", e.Node, e.Incarnation, e.Version)
	}
	b.WriteString(": ")
	last := e.Err
	oe, wrapped := e.Err.(*actor.OutcomeError)
	if wrapped {
		last = oe.Err // our outcome wrapper: show what happened
	}
	b.WriteString(describeErr(last))
	n := len(e.Attempts)
	var took time.Duration
	if n > 1 {
		took = e.Attempts[n-1].Start.Sub(e.Attempts[0].Start)
	}
	fmt.Fprintf(&b, " [%d attempt%s", n, plural(n))
	if n > 1 {
		fmt.Fprintf(&b, ", the last %v after the first", took)
	}
	b.WriteString("; " + e.Reason.String())
	if e.Reason == ReasonBudget {
		fmt.Fprintf(&b, " (%v from the first attempt)", e.Budget)
	}
	if wrapped {
		b.WriteString("; an earlier attempt may have executed: check before retrying")
	}
	b.WriteString("]")
	return b.String()
}

// Unwrap returns the last attempt's error and, when the caller's ctx
// ended the call, ctx.Err().
func (e *CallError) Unwrap() []error {
	out := []error{e.Err}
	if e.CtxErr != nil {
		out = append(out, e.CtxErr)
	}
	return out
}

// opServiceCall is the Op of the *actor.Error of a call refused before
// its first attempt (an invalid option).
const opServiceCall = "service call"

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// describeErr is an attempt's error without what the CallError already
// says (operation, node, incarnation): the reason and what it means.
func describeErr(err error) string {
	if err == nil {
		return ""
	}
	if le, ok := err.(*LookupError); ok {
		return "lookup failed: " + le.detail()
	}
	if ae, ok := err.(*actor.Error); ok {
		return strings.TrimPrefix(ae.Err.Error(), "mailroom: ") + ": " + advice(ae.Outcome)
	}
	var re *actor.RemoteError
	if errors.As(err, &re) {
		code := ""
		if re.Code != "" {
			code = " [" + re.Code + "]"
		}
		return "rejected" + code + ": " + re.Message + ": executed"
	}
	var pe *actor.PanicError
	if errors.As(err, &pe) {
		return fmt.Sprintf("panicked: %v: executed", pe.Value)
	}
	return strings.TrimPrefix(err.Error(), "mailroom: ")
}

// advice is what an outcome means for the caller (actor's wording).
func advice(o actor.Execution) string {
	switch o {
	case actor.NotExecuted:
		return "not executed; safe to retry"
	case actor.MayHaveExecuted:
		return "may have executed; check before retrying"
	}
	return "executed"
}
