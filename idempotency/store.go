package idempotency

import (
	"errors"
	"fmt"
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
}

// Store keeps records. Implementations are safe for concurrent use.
type Store interface {
	// Claim records key as Running for incarnation inc if the store has
	// no record of it, and returns (the new record, true); otherwise the
	// record it has, false. A full store returns ErrStoreFull.
	Claim(key string, inc uint64) (Record, bool, error)
	// Put replaces key's record (the end of an attempt, or a fence).
	Put(key string, r Record) error
	// Get returns key's record, and false when there is none.
	Get(key string) (Record, bool, error)
	// Durable reports whether records survive the incarnation.
	Durable() bool
}

var (
	// ErrStoreFull: the store holds as many keys or bytes as it may; the
	// attempt did not run (not executed).
	ErrStoreFull = errors.New("idempotency: store full")
	// ErrBadKey: the key is empty or longer than MaxKeyBytes.
	ErrBadKey = errors.New("idempotency: bad key")
	// ErrFenced: Status answered never-ran for this key; this late attempt
	// is refused and did not run (not executed).
	ErrFenced = errors.New("idempotency: key fenced after never-ran")
	// ErrRecordLost: the record would have been kept by an earlier
	// incarnation's in-memory store, lost with it: what the attempt did
	// cannot be known from here.
	ErrRecordLost = errors.New("idempotency: record lost with the incarnation that took the call (in-memory store)")
)

// MaxKeyBytes bounds a key.
const MaxKeyBytes = 256

func checkKey(key string) error {
	if key == "" || len(key) > MaxKeyBytes {
		return fmt.Errorf("%w: %d bytes (1 to %d)", ErrBadKey, len(key), MaxKeyBytes)
	}
	return nil
}
