package future

import (
	"context"
	"sync/atomic"
)

// Future completes once, from any goroutine.
type Future struct {
	ch   chan result
	done atomic.Bool
	late *atomic.Uint64 // counts replies that came after completion
}

type result struct {
	msg any
	err error
}

// New returns a future whose late replies late counts.
func New(late *atomic.Uint64) *Future {
	return &Future{ch: make(chan result, 1), late: late}
}

// Reply completes the future once; a later reply is counted as late.
func (f *Future) Reply(msg any, err error) {
	if f.done.CompareAndSwap(false, true) {
		f.ch <- result{msg, err}
		return
	}
	f.CountLate()
}

// CountLate counts a reply that came after the future had completed (a
// wrapper that completes it once on its own behalf calls it).
func (f *Future) CountLate() { f.late.Add(1) }

// Completed reports whether the future has been completed (answered or
// claimed).
func (f *Future) Completed() bool { return f.done.Load() }

// Claim completes the future from the waiting side (ctx ended, liveness
// failed). It reports false when a reply already won; read it with Result.
func (f *Future) Claim() bool { return f.done.CompareAndSwap(false, true) }

// Result blocks for the reply; use after Claim returned false.
func (f *Future) Result() (any, error) {
	r := <-f.ch
	return r.msg, r.err
}

// Wait blocks until the reply, ctx ends, or gone is closed (nil: never).
// ok is false when ctx or gone ended the wait and the future is now
// claimed: the caller reports why (ctx.Err() says whether ctx did). A
// reply that wins the race is returned with ok true.
func (f *Future) Wait(ctx context.Context, gone <-chan struct{}) (msg any, err error, ok bool) {
	select {
	case r := <-f.ch:
		return r.msg, r.err, true
	case <-ctx.Done():
	case <-gone:
	}
	if f.Claim() {
		return nil, nil, false
	}
	msg, err = f.Result()
	return msg, err, true
}
