package actor

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error the runtime returns wraps one of these (or
// is a *RemoteError or *PanicError), so callers branch with errors.Is and
// ask Outcome whether the work ran. Each doc gives the sentinel's wire
// code (what a reply from another node carries, see ErrorCode) and its
// outcome.
var (
	// ErrUnreachable ("unreachable"): no link to the node, or the node is
	// unknown. Not executed.
	ErrUnreachable = errors.New("mailroom: node unreachable")
	// ErrNoProcess ("no_process"): the target actor does not exist, is of
	// another incarnation, or died before it answered. Not executed when
	// the actor never handled the request: it was already gone, or the
	// request was still queued when it died (in its mailbox, or in the
	// batch it had taken, behind the message it crashed or stopped on),
	// always, whatever the timing. May have executed only when the actor
	// handled the request and died before answering it (it took it and
	// deferred the answer, Context.Defer, or returned without one).
	// Outcome tells them apart.
	ErrNoProcess = errors.New("mailroom: no such process")
	// ErrNoFunction ("no_function"): no function is registered under that
	// name. Not executed.
	ErrNoFunction = errors.New("mailroom: no such function")
	// ErrNoService ("no_service"): no provider announces that service. Not
	// executed.
	ErrNoService = errors.New("mailroom: no such service")
	// ErrNoVersion ("no_version"): the service exists but no provider has a
	// compatible version. Not executed.
	ErrNoVersion = errors.New("mailroom: no compatible service version")
	// ErrNotSent ("not_sent"): the request was still queued when its link
	// died. Not executed.
	ErrNotSent = errors.New("mailroom: not sent")
	// ErrNodeDown ("node_down"): the node incarnation that took the request
	// is gone. May have executed.
	ErrNodeDown = errors.New("mailroom: node down")
	// ErrMailboxFull ("mailbox_full"): a bounded mailbox with the FailFast
	// policy is full. Not executed.
	ErrMailboxFull = errors.New("mailroom: mailbox full")
	// ErrOverloaded ("overloaded"): a bounded proxy queue with the FailFast
	// policy is full. Not executed.
	ErrOverloaded = errors.New("mailroom: overloaded")
	// ErrStopped ("stopped"): the local system is stopping or stopped. Not
	// executed.
	ErrStopped = errors.New("mailroom: system stopped")
	// ErrDeadlineExceeded ("deadline_exceeded"): the call's deadline passed
	// before the callee started it. Not executed. (A deadline that passes
	// while the work runs is the caller's context.DeadlineExceeded, may
	// have executed.)
	ErrDeadlineExceeded = errors.New("mailroom: deadline passed before execution")
	// ErrNameTaken ("name_taken"): SpawnNamed or Register with a name that
	// is already registered. Not executed.
	ErrNameTaken = errors.New("mailroom: name already registered")
	// ErrBadMessage ("bad_message"): a message cannot cross the wire (not a
	// proto.Message, an unregistered type, undecodable bytes, over
	// MaxMessageSize). Not executed when the request could not travel;
	// executed (or may have executed) when the handler ran and its answer
	// could not: Outcome tells them apart.
	ErrBadMessage = errors.New("mailroom: bad message")
	// ErrDraining ("draining"): the callee is draining for a graceful stop
	// and refuses new work. Not executed.
	ErrDraining = errors.New("mailroom: node draining")
	// ErrReplyType ("reply_type"): RequestAs, RequestNamedAs or CallAs got
	// an answer of another type than the one asked for. Executed: the
	// target handled it.
	ErrReplyType = errors.New("mailroom: reply of an unexpected type")
)

// Error is the runtime's failure of one operation: what was attempted, on
// which node incarnation and target, the reason, and the outcome. It wraps
// the reason, so errors.Is(err, ErrNodeDown) works. A handler's error that
// states an outcome other than Executed (see NotExecutedError) reaches its
// caller as an *Error too, with the handler's node and function.
type Error struct {
	Op          string // "send", "request", "call", "cast", "spawn", ...
	Node        string // target node, "" for local-only operations
	Incarnation uint64 // target incarnation when known, else 0
	Target      string // a PID, a registered name or a function name
	Err         error  // the reason; usually one of the sentinels
	Outcome     Execution
}

// NewError builds an *Error whose outcome is the reason's default: the
// outcome the reason states (see Outcome), MayHaveExecuted when it states
// none.
func NewError(op, node string, inc uint64, target string, reason error) *Error {
	return &Error{Op: op, Node: node, Incarnation: inc, Target: target, Err: reason, Outcome: sentinelOutcome(reason)}
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("mailroom: ")
	b.WriteString(e.Op)
	if e.Node != "" {
		b.WriteString(" on node ")
		b.WriteString(e.Node)
		if e.Incarnation != 0 {
			fmt.Fprintf(&b, " (incarnation %016x)", e.Incarnation)
		}
	}
	if e.Target != "" {
		b.WriteString(" to ")
		b.WriteString(e.Target)
	}
	b.WriteString(": ")
	b.WriteString(trimAdvice(strings.TrimPrefix(e.Err.Error(), "mailroom: ")))
	b.WriteString(": ")
	b.WriteString(e.Outcome.advice())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// RemoteError is a rejection: the handler ran and returned an error that
// states no other outcome (see Outcome). Code is the handler's error code
// (see Coded), Message its text. Err is the original error when the
// handler ran in this process; from another node it is nil, or
// ErrReplyType when Code names it, so errors.Is works for the codes a
// rejection can mean. A rejection never matches a sentinel of another
// outcome, whatever its code.
type RemoteError struct {
	Op          string
	Node        string
	Incarnation uint64
	Target      string
	Code        string
	Message     string
	Err         error
}

func (e *RemoteError) Error() string {
	var b strings.Builder
	b.WriteString("mailroom: ")
	b.WriteString(e.Op)
	if e.Target != "" {
		b.WriteString(" ")
		b.WriteString(e.Target)
	}
	if e.Node != "" {
		b.WriteString(" on node ")
		b.WriteString(e.Node)
		if e.Incarnation != 0 {
			fmt.Fprintf(&b, " (incarnation %016x)", e.Incarnation)
		}
	}
	b.WriteString(": rejected")
	if e.Code != "" {
		b.WriteString(" [")
		b.WriteString(e.Code)
		b.WriteString("]")
	}
	b.WriteString(": ")
	b.WriteString(trimAdvice(strings.TrimPrefix(e.Message, "mailroom: ")))
	b.WriteString(": executed")
	return b.String()
}

func (e *RemoteError) Unwrap() error { return e.Err }

// ErrorCode is the rejection's code (Coded): the handler's, whether it
// ran here or on another node, so ErrorCode(err) finds it and a handler
// that returns a rejection it received passes the code on.
func (e *RemoteError) ErrorCode() string {
	if e.Code == "" && e.Err != nil {
		return ErrorCode(e.Err)
	}
	return e.Code
}

// Is matches target by code when the original error is not available: a
// Reject error with the same code, or a sentinel a rejection can mean
// (ErrReplyType).
func (e *RemoteError) Is(target error) bool {
	if e.Code == "" {
		return false
	}
	if s := sentinelFor(target); s != nil {
		return s.code == e.Code && s.outcome == Executed
	}
	c, ok := target.(Coded)
	return ok && c.ErrorCode() == e.Code
}

// Coded is implemented by handler errors that carry a stable code, which
// travels with a rejection so the caller can branch on it.
type Coded interface {
	error
	ErrorCode() string
}

// Reject returns an error with a code, for handlers: a rejection (executed)
// whose code travels to the caller (RemoteError.Code, ErrorCode). Codes are
// the handler's own; the sentinels' codes mean the runtime's conditions,
// and a rejection carrying one does not match the sentinel. Wrap it with
// NotExecutedError or MayHaveExecutedError to declare another outcome.
func Reject(code, message string) error { return &codedError{code: code, msg: message} }

type codedError struct{ code, msg string }

func (e *codedError) Error() string     { return e.msg }
func (e *codedError) ErrorCode() string { return e.code }
func (e *codedError) Is(target error) bool {
	c, ok := target.(*codedError)
	return ok && c.code == e.code
}

// PanicError is a handler that panicked: the value and the stack of the
// panicking goroutine. The work was executed (at least in part).
type PanicError struct {
	Op     string
	Node   string
	Target string
	Value  any
	Stack  []byte
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

func (e *PanicError) Error() string {
	where := e.Target
	if e.Node != "" {
		where += " on node " + e.Node
	}
	if where != "" {
		where = " " + where
	}
	op := e.Op
	if op == "" {
		op = "handler"
	}
	return fmt.Sprintf("mailroom: %s%s panicked: %v: executed", op, where, e.Value)
}
