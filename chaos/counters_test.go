package chaos

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Counter names one of the counters a node under test keeps in a
// shared file.
type Counter int

const (
	// Delivered: messages an ordered sink handled.
	Delivered Counter = iota
	// OutOfOrder: messages whose sequence number was not above the last
	// one the same sink had from the same sender (a reorder or a
	// duplicate). Must stay 0.
	OutOfOrder
	// Gaps: sequence numbers skipped, per sender and sink (messages that
	// were dropped and counted elsewhere, or lost in flight).
	Gaps
	// Stale: messages marked as sent to a PID of a dead incarnation that
	// reached an actor anyway. Must stay 0.
	Stale
	// DeadLetters: dead letters on the node.
	DeadLetters
	// Goroutines and Resident (RSS, bytes): the node's last self-report
	// (every 100 ms).
	Goroutines
	Resident
	// Received: messages the node's remote layer read from its links,
	// delivered or not (remote.Stats.Received), and Queued: messages
	// waiting in its sinks' mailboxes; both reported every 10 ms.
	Received
	Queued
	// CallsEnded, CallsNodeDown, CallsOther: calls started by spawn_calls
	// that ended, failed with ErrNodeDown (may have executed), or ended
	// otherwise; CallsLastEnd: when the last one ended (Unix ms).
	CallsEnded
	CallsNodeDown
	CallsOther
	CallsLastEnd
	numCounters
)

var counterNames = [numCounters]string{"delivered", "out_of_order", "gaps", "stale", "dead_letters", "goroutines", "rss", "received", "queued",
	"calls_ended", "calls_node_down", "calls_other", "calls_last_end"}

func (c Counter) String() string { return counterNames[c] }

// slot is the stride between counters: one cache line each.
const slot = 64

// Counters are int64 counters in a file mapped MAP_SHARED. A child node
// writes them and the parent reads them through its own mapping; they
// live in the page cache, so they survive a SIGKILL of the child.
type Counters struct {
	f   *os.File
	mem []byte
}

// OpenCounters maps the counter file at path, creating it (zeroed) if it
// does not exist.
func OpenCounters(path string) (*Counters, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	size := int(numCounters) * slot
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return nil, err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("chaos: mmap %s: %w", path, err)
	}
	return &Counters{f: f, mem: mem}, nil
}

func (c *Counters) ptr(k Counter) *int64 { return (*int64)(unsafe.Pointer(&c.mem[int(k)*slot])) }

// Add adds d to counter k.
func (c *Counters) Add(k Counter, d int64) { atomic.AddInt64(c.ptr(k), d) }

// Max raises counter k to v if it is lower.
func (c *Counters) Max(k Counter, v int64) {
	for p := c.ptr(k); ; {
		cur := atomic.LoadInt64(p)
		if cur >= v || atomic.CompareAndSwapInt64(p, cur, v) {
			return
		}
	}
}

// Store sets counter k.
func (c *Counters) Store(k Counter, v int64) { atomic.StoreInt64(c.ptr(k), v) }

// Load reads counter k.
func (c *Counters) Load(k Counter) int64 { return atomic.LoadInt64(c.ptr(k)) }

// Snapshot reads every counter.
func (c *Counters) Snapshot() Snapshot {
	var s Snapshot
	for k := range numCounters {
		s[k] = c.Load(k)
	}
	return s
}

// Close unmaps the file. The counters stay in the file.
func (c *Counters) Close() error {
	err := syscall.Munmap(c.mem)
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Snapshot is the value of every counter at one time.
type Snapshot [numCounters]int64

// Get returns counter k.
func (s Snapshot) Get(k Counter) int64 { return s[k] }

// Sum adds snapshots (one node restarted many times: one file each).
func (s Snapshot) Sum(o Snapshot) Snapshot {
	for i := range s {
		s[i] += o[i]
	}
	return s
}
