package patterns

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/proto"
)

// Sentinel errors; branch with errors.Is.
var (
	// ErrNoneAvailable: the node list was empty (CallOne, CallAny,
	// CallAll, CastOne), or no node of it could be reached (CallAll, with
	// unreachable nodes skipped). ecall's none_is_available.
	ErrNoneAvailable = errors.New("patterns: none is available")
	// ErrAllFailed is matched by every *AllFailedError: CallOne or
	// CallAny found no node that succeeded.
	ErrAllFailed = errors.New("patterns: every node failed")
	// ErrCoordinatorStopped is the Reason of a *CoordinatorError whose
	// coordinator was stopped (killed, or its node or Patterns stopping)
	// before it answered.
	ErrCoordinatorStopped = errors.New("patterns: coordinator stopped before it answered")
	// ErrCallerLost is wrapped by the error of a node whose caller actor
	// ended (stopped or crashed) before it reported: the node counts as
	// unreachable, like ecall's {badrpc, Reason} for a killed caller.
	ErrCallerLost = errors.New("patterns: caller ended before it reported")
	// ErrStopped: the Patterns (or its node) is stopped or stopping; no
	// group call was started.
	ErrStopped = errors.New("patterns: stopped")
)

// NodeError is the failure of one entry of the node list: a rejection
// (*actor.RemoteError), a crash (*actor.PanicError), or, when it counts,
// an unreachable node (see IsUnreachable). It is returned and listed as a
// value: match it with errors.As(err, new(patterns.NodeError)).
type NodeError struct {
	Node string
	Err  error
}

// Error names the node and its error.
func (e NodeError) Error() string { return "patterns: node " + e.Node + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e NodeError) Unwrap() error { return e.Err }

// AllFailedError is the failure of CallOne and CallAny: no node
// succeeded. Errors lists the counted failures in the order they
// arrived; it is empty when every node was unreachable and unreachable
// nodes are skipped (the default), ecall's {error, []}. It matches
// ErrAllFailed, and errors.Is looks into every node's error.
type AllFailedError struct {
	Pattern  string // "call_one" or "call_any"
	Function string
	Errors   []NodeError
}

// Error names the pattern, the function and each node's failure.
func (e *AllFailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "patterns: %s %q: every node failed", e.Pattern, e.Function)
	if len(e.Errors) == 0 {
		b.WriteString(" (none could be reached; unreachable nodes are skipped)")
	}
	for i, ne := range e.Errors {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(ne.Node)
		b.WriteString(": ")
		b.WriteString(ne.Err.Error())
	}
	return b.String()
}

// Is matches ErrAllFailed.
func (e *AllFailedError) Is(target error) bool { return target == ErrAllFailed }

// Unwrap returns the nodes' errors.
func (e *AllFailedError) Unwrap() []error {
	out := make([]error, len(e.Errors))
	for i, ne := range e.Errors {
		out[i] = ne
	}
	return out
}

// CoordinatorError is a group call that ended without its policy's
// answer, naming the pattern and its arguments (ecall's
// exit({Reason, {ecall, Function, Args}})). Reason is
//   - ctx.Err() when the caller's ctx ended first;
//   - ErrCoordinatorStopped when the coordinator was stopped (killed,
//     or its node or Patterns stopping);
//   - an *actor.PanicError when the coordinator crashed;
//   - whatever else kept the coordinator from starting or answering
//     (ErrStopped, an *actor.Error).
//
// The function may have run on any of the nodes: read a CoordinatorError
// as "may have executed", whatever actor.Outcome makes of its Reason (a
// coordinator's *actor.PanicError reads as executed).
type CoordinatorError struct {
	Pattern  string // "call_one", "call_any", "call_all" or "call_all_wait"
	Function string
	Nodes    []string
	Arg      proto.Message
	Reason   error
}

// Error names the pattern, its arguments and the reason.
func (e *CoordinatorError) Error() string {
	arg := "<nil>"
	if e.Arg != nil {
		arg = string(e.Arg.ProtoReflect().Descriptor().FullName())
	}
	return fmt.Sprintf("patterns: %s(nodes %v, function %q, arg %s): %s",
		e.Pattern, e.Nodes, e.Function, arg, strings.TrimPrefix(e.Reason.Error(), "patterns: "))
}

// Unwrap returns Reason.
func (e *CoordinatorError) Unwrap() error { return e.Reason }

// IsUnreachable reports whether err means the call never got an answer
// from its node: actor.ErrUnreachable (no link, unknown node),
// actor.ErrNodeDown (the incarnation that took it left), actor.ErrNotSent
// (queued when its link died), or ErrCallerLost. Such nodes are skipped
// unless the call has the UnreachableIsError option. A rejection or a
// crash is an answer, never unreachable, whatever it wraps; a function's
// error that keeps one of these outcomes (a downstream call's error
// returned as-is) counts as unreachable.
func IsUnreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrCallerLost) {
		return true // checked first: a crashed caller's reason is a *PanicError
	}
	var re *actor.RemoteError
	var pe *actor.PanicError
	if errors.As(err, &re) || errors.As(err, &pe) {
		return false
	}
	return errors.Is(err, actor.ErrUnreachable) || errors.Is(err, actor.ErrNodeDown) ||
		errors.Is(err, actor.ErrNotSent)
}

// callerLost is the error of a node whose caller ended with reason
// before it reported.
func callerLost(pid actor.PID, reason error) error {
	if reason == nil {
		return fmt.Errorf("%w: %s was stopped", ErrCallerLost, pid)
	}
	return fmt.Errorf("%w: %s: %w", ErrCallerLost, pid, reason)
}
