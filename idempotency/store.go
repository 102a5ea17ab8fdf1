package idempotency

import (
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
)

// State is what a record says of one key.
type State int

const (
	// NeverRan: no attempt of the key ran here; the key is now fenced.
	NeverRan State = iota
	// Running: an attempt is running now, in this incarnation.
	Running
	// Done: an attempt ended; the record holds its reply or error.
	Done
	// Interrupted: an attempt was running when the incarnation running it
	// ended (durable stores only): it may have done part of its work.
	Interrupted
	// Fenced: Status answered NeverRan; a late attempt is refused.
	Fenced
)

var stateNames = [...]string{"never ran", "running", "done", "interrupted", "fenced"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Record is what a store keeps for a key.
type Record struct {
	State State
	Inc   uint64 // the incarnation that ran (or fenced) it
	Reply []byte // Done: the handler's reply
	Err   string // Done: the handler's error text, "" when it succeeded
	// Code and Outcome are those of the handler's error (Done, Err set):
	// its code (actor.ErrorCode) and whether it ran (actor.Executed, a
	// rejection or a panic) or may have (actor.MayHaveExecuted, e.g. its
	// ctx ended mid-work). A repeat of the key gets the same.
	Code    string
	Outcome actor.Execution
	// Attempt (Fenced) is the highest attempt number the fence refuses
	// (WithAttempt): a call of a higher attempt of the key runs.
	Attempt uint64
}

// Store keeps records. Implementations are safe for concurrent use.
type Store interface {
	// Claim records key as Running for incarnation inc if the store has
	// no record of it, and returns (the new record, true); otherwise the
	// record it has, false. A full store returns ErrStoreFull.
	Claim(key string, inc uint64) (Record, bool, error)
	// Put replaces key's record (the end of an attempt, or a fence).
	Put(key string, r Record) error
	// Delete removes key's record (an attempt that did not execute
	// releases its claim, so a retry runs). No record is not an error.
	Delete(key string) error
	// Get returns key's record, and false when there is none.
	Get(key string) (Record, bool, error)
	// Durable reports whether records survive the incarnation.
	Durable() bool
}

// The errors of this package carry a code (actor.Coded), so a caller on
// another node matches them with errors.Is too: a rejection or an
// outcome-declaring error keeps its code on the wire.
var (
	// ErrStoreFull ("idempotency_store_full"): the store holds as many
	// keys or bytes as it may; the attempt did not run (not executed).
	ErrStoreFull error = &codeError{"idempotency_store_full", "idempotency: store full"}
	// ErrBadKey ("idempotency_bad_key"): the key is empty or longer than
	// MaxKeyBytes; the attempt did not run (not executed).
	ErrBadKey error = &codeError{"idempotency_bad_key", "idempotency: bad key"}
	// ErrFenced ("idempotency_fenced"): Status answered never-ran for this
	// key; this late attempt is refused and did not run (not executed).
	ErrFenced error = &codeError{"idempotency_fenced", "idempotency: key fenced after never-ran"}
	// ErrRecordLost ("idempotency_record_lost"): the record would have
	// been kept by an earlier incarnation's in-memory store, lost with it:
	// what the attempt did cannot be known from here.
	ErrRecordLost error = &codeError{"idempotency_record_lost", "idempotency: record lost with the incarnation that took the call (in-memory store)"}
	// ErrInterrupted ("idempotency_interrupted"): an attempt of the key was
	// running when the incarnation running it ended (a durable store
	// kept its claim): it may have done part of its work, so it is not
	// run again (may have executed). See RerunInterrupted.
	ErrInterrupted error = &codeError{"idempotency_interrupted", "idempotency: an attempt was running when its incarnation ended"}
)

// codeError is a sentinel with a code: it matches, by code, the same
// error decoded from another node (actor.RemoteError.Is).
type codeError struct{ code, msg string }

func (e *codeError) Error() string     { return e.msg }
func (e *codeError) ErrorCode() string { return e.code }

// MaxKeyBytes bounds a key.
const MaxKeyBytes = 256

func checkKey(key string) error {
	if key == "" || len(key) > MaxKeyBytes {
		return fmt.Errorf("%w: %d bytes (1 to %d)", ErrBadKey, len(key), MaxKeyBytes)
	}
	return nil
}
