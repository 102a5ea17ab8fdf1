package router

import (
	"errors"
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
)

var (
	// ErrNoRoutees: the router had no routee to give the message to (none
	// added yet, all removed, or every one died). Not executed: nothing
	// was sent. Send returns it too: a router never drops a message
	// silently.
	ErrNoRoutees = errors.New("router: no routees")
	// ErrBroadcastRequest: Request on a Broadcast router, which has no
	// one answer to return. Not executed. Use ScatterGatherFirst for the
	// first answer of all routees, or package patterns for all of them.
	ErrBroadcastRequest = errors.New("router: request on a broadcast router")
	// ErrClosed: the router was closed. Not executed.
	ErrClosed = errors.New("router: closed")
	// ErrNotLocal: a pool's supervisor and a PID given to a local-only
	// operation must be on the router's own node.
	ErrNotLocal = errors.New("router: not on this node")
)

// notExecuted is err (one of the sentinels above) for operation op, with
// the outcome actor.Outcome reads: NotExecuted.
func notExecuted(op string, kind Kind, err error) error {
	return actor.NotExecutedError(fmt.Errorf("router %s: %s: %w", kind, op, err))
}

// ScatterError is what a ScatterGatherFirst request returns when every
// routee failed: each routee's error, in the order they came. Its
// outcome (actor.Outcome of the error Request returns) is NotExecuted
// only when every routee's was, MayHaveExecuted when any routee's was,
// and Executed otherwise (some routee handled it and refused).
type ScatterError struct {
	Errs []error
}

func (e *ScatterError) Error() string {
	return fmt.Sprintf("router scatter-gather-first: all %d routees failed: %v", len(e.Errs), errors.Join(e.Errs...))
}

// Unwrap is the routees' errors, for errors.Is and errors.As.
func (e *ScatterError) Unwrap() []error { return e.Errs }

// combined is the outcome of a request that went to every routee and
// failed at each.
func combined(errs []error) actor.Execution {
	all := actor.NotExecuted
	for _, err := range errs {
		switch actor.Outcome(err) {
		case actor.MayHaveExecuted:
			return actor.MayHaveExecuted
		case actor.Executed:
			all = actor.Executed
		}
	}
	return all
}

// scatterFailed is the error of a scatter-gather whose routees all
// failed, carrying its combined outcome.
func scatterFailed(errs []error) error {
	return &actor.OutcomeError{Outcome: combined(errs), Err: &ScatterError{Errs: errs}}
}
