package remote

import (
	"context"
	"sync"
	"time"
)

// callCtx is the context an inbound call's handler runs under: cancelled
// when the caller cancels it, when the caller's incarnation is gone, or
// when the handler has returned; with the caller's deadline, if any. It
// lives inside the call's one allocation (inboundCall), and what most
// handlers never use costs nothing until they do: its Done channel is made
// on the first Done, and the timer that closes it at the deadline only
// then. Err reports the deadline as soon as it has passed, Done or not.
//
// Contexts derived from it (context.WithTimeout and the like) register
// through AfterFunc, as on a context of the standard library, so they
// need no goroutine of their own.
type callCtx struct {
	deadline time.Time // zero: none
	// tr, when set, is the trace the call carried (trace.go): its
	// context answers Value. Set before the handler runs, read-only
	// after. A pointer, so that an untraced call's one allocation stays
	// in its size class.
	tr *inTrace

	mu    sync.Mutex // protects following
	done  chan struct{}
	err   error
	timer *time.Timer
	after map[*afterFunc]struct{} // AfterFunc registrations not yet run
}

type afterFunc struct{ f func() }

var _ context.Context = (*callCtx)(nil)

func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, !c.deadline.IsZero() }

func (c *callCtx) Value(key any) any {
	if c.tr != nil {
		return c.tr.ctx.Value(key)
	}
	return nil
}

func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	if c.err != nil {
		c.done = closedDone
		return c.done
	}
	c.done = make(chan struct{})
	if !c.deadline.IsZero() {
		c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.cancel(context.DeadlineExceeded) })
	}
	return c.done
}

func (c *callCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err == nil && !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
		c.cancel(context.DeadlineExceeded)
		c.mu.Lock()
		err = c.err
		c.mu.Unlock()
	}
	return err
}

// AfterFunc runs f in its own goroutine once the context is cancelled
// (at once if it is already); stop unregisters it and reports whether it
// did so before f was started. The standard library's derived contexts
// use it.
func (c *callCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	if c.after == nil {
		c.after = make(map[*afterFunc]struct{})
	}
	c.after[a] = struct{}{}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.after[a]; !ok {
			return false
		}
		delete(c.after, a)
		return true
	}
}

// cancel ends the context with err (the first cancel wins).
func (c *callCtx) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	after := c.after
	c.after = nil
	c.mu.Unlock()
	for a := range after {
		go a.f()
	}
}

// closedDone is the Done channel of a context cancelled before anyone
// asked for it.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
