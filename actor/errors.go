package actor

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error the runtime returns wraps exactly one of these
// (or is a *RemoteError or *PanicError), so callers branch with errors.Is and
// ask Outcome whether the work ran.
var (
	// ErrUnreachable: no link to the node, or the node is unknown. Not executed.
	ErrUnreachable = errors.New("mailroom: node unreachable")
	// ErrNoProcess: the target actor does not exist, is of another
	// incarnation, or died before it answered. Not executed when the target
	// was already gone; see Outcome for the died-while-handling case.
	ErrNoProcess = errors.New("mailroom: no such process")
	// ErrNoFunction: no function is registered under that name. Not executed.
	ErrNoFunction = errors.New("mailroom: no such function")
	// ErrNoService: no provider announces that service. Not executed.
	ErrNoService = errors.New("mailroom: no such service")
	// ErrNoVersion: the service exists but no provider has a compatible version. Not executed.
	ErrNoVersion = errors.New("mailroom: no compatible service version")
	// ErrNotSent: the request was still queued when its link died. Not executed.
	ErrNotSent = errors.New("mailroom: not sent")
	// ErrNodeDown: the node incarnation that took the request is gone. May have executed.
	ErrNodeDown = errors.New("mailroom: node down")
	// ErrMailboxFull: a bounded mailbox with the FailFast policy is full. Not executed.
	ErrMailboxFull = errors.New("mailroom: mailbox full")
	// ErrOverloaded: a bounded proxy queue with the FailFast policy is full. Not executed.
	ErrOverloaded = errors.New("mailroom: overloaded")
	// ErrStopped: the local system is stopping or stopped. Not executed.
	ErrStopped = errors.New("mailroom: system stopped")
	// ErrDeadlineExceeded: the call's deadline passed before the callee
	// started it. Not executed.
	ErrDeadlineExceeded = errors.New("mailroom: deadline passed before execution")
	// ErrNameTaken: SpawnNamed with a name that is already registered.
	ErrNameTaken = errors.New("mailroom: name already registered")
	// ErrBadMessage: a message cannot cross the wire (not a proto.Message,
	// unregistered type, undecodable bytes). Not executed.
	ErrBadMessage = errors.New("mailroom: bad message")
	// ErrDraining: the callee is draining for a graceful stop and refuses
	// new work. Not executed.
	ErrDraining = errors.New("mailroom: node draining")
	// ErrReplyType: RequestAs, RequestNamedAs or CallAs got an answer of
	// another type than the one asked for. Executed: the target handled it.
	ErrReplyType = errors.New("mailroom: reply of an unexpected type")
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

// notExecuted lists the sentinels whose meaning is "the work never started".
var notExecuted = []error{
	ErrUnreachable, ErrNoProcess, ErrNoFunction, ErrNoService, ErrNoVersion,
	ErrNotSent, ErrMailboxFull, ErrOverloaded, ErrStopped, ErrDeadlineExceeded,
	ErrBadMessage, ErrDraining, ErrNameTaken,
}

// executed lists the sentinels whose meaning is "the work ran".
var executed = []error{ErrReplyType}

// Outcome classifies err. nil, *RemoteError and *PanicError are Executed;
// an *Error reports the outcome it was built with; bare sentinels map as
// documented on each; ErrNodeDown and anything unknown (including a bare
// context error) are MayHaveExecuted, the only safe reading.
func Outcome(err error) Execution {
	if err == nil {
		return Executed
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Outcome
	}
	var re *RemoteError
	if errors.As(err, &re) {
		return Executed
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		return Executed
	}
	for _, s := range executed {
		if errors.Is(err, s) {
			return Executed
		}
	}
	for _, s := range notExecuted {
		if errors.Is(err, s) {
			return NotExecuted
		}
	}
	return MayHaveExecuted
}

// sentinelOutcome is the default outcome of a sentinel when an *Error is built.
func sentinelOutcome(err error) Execution {
	if errors.Is(err, ErrNodeDown) {
		return MayHaveExecuted
	}
	for _, s := range executed {
		if errors.Is(err, s) {
			return Executed
		}
	}
	for _, s := range notExecuted {
		if errors.Is(err, s) {
			return NotExecuted
		}
	}
	return MayHaveExecuted
}

// Error is the runtime's failure of one operation: what was attempted, on
// which node incarnation and target, the reason, and the outcome. It wraps
// the reason, so errors.Is(err, ErrNodeDown) works.
type Error struct {
	Op          string // "send", "request", "call", "cast", "spawn", ...
	Node        string // target node, "" for local-only operations
	Incarnation uint64 // target incarnation when known, else 0
	Target      string // a PID, a registered name or a function name
	Err         error  // the reason; usually one of the sentinels
	Outcome     Execution
}

// NewError builds an *Error whose outcome is the reason's default.
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
	b.WriteString(strings.TrimPrefix(e.Err.Error(), "mailroom: "))
	b.WriteString(": ")
	b.WriteString(e.Outcome.advice())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// RemoteError is a rejection: the handler ran and returned an error. Code is
// the handler's error code (see Coded), Message its text. Err is the
// original error when the handler ran in this process, or the well-known
// sentinel named by Code when it came over the wire, so errors.Is works in
// both cases.
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
	b.WriteString(e.Message)
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

// Is matches a sentinel by code when the original error is not available.
func (e *RemoteError) Is(target error) bool {
	if e.Code == "" {
		return false
	}
	return codeOf(target) == e.Code
}

// Coded is implemented by handler errors that carry a stable code, which
// travels with a rejection so the caller can branch on it.
type Coded interface {
	error
	ErrorCode() string
}

// Reject returns an error with a code, for handlers.
func Reject(code, message string) error { return &codedError{code: code, msg: message} }

type codedError struct{ code, msg string }

func (e *codedError) Error() string     { return e.msg }
func (e *codedError) ErrorCode() string { return e.code }
func (e *codedError) Is(target error) bool {
	c, ok := target.(*codedError)
	return ok && c.code == e.code
}

// sentinelCodes map the well-known sentinels to wire codes and back.
var sentinelCodes = map[error]string{
	ErrUnreachable:      "unreachable",
	ErrNoProcess:        "no_process",
	ErrNoFunction:       "no_function",
	ErrNoService:        "no_service",
	ErrNoVersion:        "no_version",
	ErrNotSent:          "not_sent",
	ErrNodeDown:         "node_down",
	ErrMailboxFull:      "mailbox_full",
	ErrOverloaded:       "overloaded",
	ErrStopped:          "stopped",
	ErrDeadlineExceeded: "deadline_exceeded",
	ErrBadMessage:       "bad_message",
	ErrDraining:         "draining",
	ErrReplyType:        "reply_type",
	// A handler that gave up because its ctx ended: errors.Is works for
	// the caller whichever side's clock fired first.
	context.DeadlineExceeded: "context_deadline",
	context.Canceled:         "context_canceled",
}

// ErrorCode returns the wire code of err: its Coded code, the code of the
// well-known sentinel it wraps, or "" (an uncoded rejection).
func ErrorCode(err error) string {
	var c Coded
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	for s, code := range sentinelCodes {
		if errors.Is(err, s) {
			return code
		}
	}
	return ""
}

// SentinelForCode returns the sentinel a wire code names, or nil.
func SentinelForCode(code string) error {
	for s, c := range sentinelCodes {
		if c == code {
			return s
		}
	}
	return nil
}

func codeOf(target error) string {
	if c, ok := sentinelCodes[target]; ok {
		return c
	}
	if c, ok := target.(Coded); ok {
		return c.ErrorCode()
	}
	return ""
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
