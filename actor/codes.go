package actor

import (
	"context"
	"errors"
)

// sentinel is a well-known reason: its wire code and its outcome. fixed
// is false for the reasons whose outcome varies (ErrNoProcess,
// ErrBadMessage, the context errors): outcome is then their default.
type sentinel struct {
	err     error
	code    string
	outcome Execution
	fixed   bool
}

// sentinels, in the order ErrorCode and Outcome try them. The codes are
// the wire's (remote/SPEC.md, "reply"); a node of an earlier version knows
// all but name_taken.
var sentinels = [...]sentinel{
	{ErrNodeDown, "node_down", MayHaveExecuted, true},
	{ErrUnreachable, "unreachable", NotExecuted, true},
	{ErrNoProcess, "no_process", NotExecuted, false},
	{ErrNoFunction, "no_function", NotExecuted, true},
	{ErrNoService, "no_service", NotExecuted, true},
	{ErrNoVersion, "no_version", NotExecuted, true},
	{ErrNotSent, "not_sent", NotExecuted, true},
	{ErrMailboxFull, "mailbox_full", NotExecuted, true},
	{ErrOverloaded, "overloaded", NotExecuted, true},
	{ErrStopped, "stopped", NotExecuted, true},
	{ErrDeadlineExceeded, "deadline_exceeded", NotExecuted, true},
	{ErrBadMessage, "bad_message", NotExecuted, false},
	{ErrDraining, "draining", NotExecuted, true},
	{ErrNameTaken, "name_taken", NotExecuted, true},
	{ErrReplyType, "reply_type", Executed, true},
	// A handler that gave up because its ctx ended: errors.Is works for
	// the caller whichever side's clock fired first.
	{context.DeadlineExceeded, "context_deadline", MayHaveExecuted, false},
	{context.Canceled, "context_canceled", MayHaveExecuted, false},
}

// sentinelFor is the entry of target when it is a well-known reason.
func sentinelFor(target error) *sentinel {
	for i := range sentinels {
		if sentinels[i].err == target {
			return &sentinels[i]
		}
	}
	return nil
}

// fixedOutcome is target's outcome when target is a sentinel whose
// outcome never varies.
func fixedOutcome(target error) (Execution, bool) {
	if s := sentinelFor(target); s != nil && s.fixed {
		return s.outcome, true
	}
	return 0, false
}

// ErrorCode returns the wire code of err: its Coded code (a Reject error,
// a rejection from another node), the code of the well-known sentinel it
// wraps (each sentinel's doc gives it; context.DeadlineExceeded is
// "context_deadline", context.Canceled "context_canceled"), or "" (an
// uncoded error).
func ErrorCode(err error) string {
	var c Coded
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	for i := range sentinels {
		if errors.Is(err, sentinels[i].err) {
			return sentinels[i].code
		}
	}
	return ""
}

// SentinelForCode returns the sentinel a wire code names, or nil.
func SentinelForCode(code string) error {
	for i := range sentinels {
		if sentinels[i].code == code {
			return sentinels[i].err
		}
	}
	return nil
}
