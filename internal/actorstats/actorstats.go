package actorstats

import (
	"math/bits"
	"time"
)

// HistBuckets is the number of buckets of Sample.Hist.
const HistBuckets = 16

// Bucket is the Sample.Hist bucket of a mailbox holding depth messages:
// 0 for an empty one, else bits.Len(depth) (bucket i holds depths in
// [2^(i-1), 2^i)), the last bucket everything from 2^(HistBuckets-2) up.
func Bucket(depth int) int {
	if depth <= 0 {
		return 0
	}
	b := bits.Len(uint(depth))
	if b >= HistBuckets {
		b = HistBuckets - 1
	}
	return b
}

// Actor is one actor of a sample.
type Actor struct {
	ID     uint64 // PID.ID on the sampled node
	Parent uint64 // its parent's ID; 0 for a top-level actor
	Name   string // its registered name, or ""
	Type   string // the Go type of its Actor value, e.g. "*proxypool.proxy"
	// Depth is the user messages in its mailbox: waiting, plus the batch
	// the actor is handling (whole, until it takes the next; a bounded
	// mailbox counts exactly what is not yet handled).
	Depth int
	// Taken is the user messages the actor took from its mailbox between
	// the previous sample and this one; Rate is Taken per second.
	Taken uint64
	Rate  float64
}

// Sample is one pass over a node's actors.
type Sample struct {
	At       time.Time
	Interval time.Duration // since the previous sample; 0 for the first
	Actors   int           // live actors seen
	Queued   int           // user messages waiting in all their mailboxes
	// Hist counts actors by mailbox depth (see Bucket).
	Hist [HistBuckets]int
	// Deepest are the actors with the most messages waiting (at most the
	// top asked for, deepest first; empty mailboxes are left out).
	Deepest []Actor
	// Busiest are the actors that took the most messages since the
	// previous sample (at most the top asked for, busiest first; idle ones
	// are left out).
	Busiest []Actor
}

// The reasons Counters.DeadLetters are counted by.
const (
	DeadNoProcess   = iota // the target actor (or name) is gone: ErrNoProcess
	DeadMailboxFull        // a bounded mailbox refused it: ErrMailboxFull
	DeadUnreachable        // its node could not be reached or went: ErrUnreachable, ErrNodeDown, ErrNotSent
	DeadStopped            // this system is stopping: ErrStopped
	DeadOther              // anything else (a bad message, ...)
	DeadReasons            // the number of reasons
)

// DeadReasonNames are the reasons' label values, by index.
var DeadReasonNames = [DeadReasons]string{"no_process", "mailbox_full", "unreachable", "stopped", "other"}

// Counters are a System's lifetime counters for the read side.
type Counters struct {
	Spawns      uint64              // actors spawned (started or not yet)
	Crashes     uint64              // actors whose Receive panicked
	DeadLetters [DeadReasons]uint64 // by reason (Dead* constants)
}
