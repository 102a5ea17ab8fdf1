package fakeclock

import (
	"slices"
	"sync"
	"time"
)

// Clock is an actor.Clock whose time moves only when a test advances it.
// Functions given to AfterFunc run on the goroutine that calls Advance,
// in deadline order, with the time set to their deadline.
type Clock struct {
	mu    sync.Mutex // protects following
	now   time.Time
	seq   int
	waits []*wait
}

type wait struct {
	at  time.Time
	seq int
	f   func()
}

// New returns a fake clock at 2030-01-01 00:00 UTC.
func New() *Clock {
	return &Clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now is the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc records f for Advance; it never calls f itself.
func (c *Clock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	w := &wait{at: c.now.Add(d), seq: c.seq, f: f}
	c.waits = append(c.waits, w)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		i := slices.Index(c.waits, w)
		if i < 0 {
			return false
		}
		c.waits = slices.Delete(c.waits, i, i+1)
		return true
	}
}

// Advance moves the time forward by d, running every function that
// comes due on the way, in order.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		i := -1
		for j, w := range c.waits {
			if !w.at.After(target) && (i < 0 || w.at.Before(c.waits[i].at) || w.at.Equal(c.waits[i].at) && w.seq < c.waits[i].seq) {
				i = j
			}
		}
		if i < 0 {
			c.now = target
			c.mu.Unlock()
			return
		}
		w := c.waits[i]
		c.waits = slices.Delete(c.waits, i, i+1)
		if w.at.After(c.now) {
			c.now = w.at
		}
		c.mu.Unlock()
		w.f()
	}
}

// Next is the earliest deadline pending, and false when none is.
func (c *Clock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for _, w := range c.waits {
		if at.IsZero() || w.at.Before(at) {
			at = w.at
		}
	}
	return at, !at.IsZero()
}
