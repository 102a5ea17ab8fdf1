package mailroomtest

import (
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/fakeclock"
)

// FakeClock is an actor.Clock whose time moves only when the test calls
// Advance: pass it as actor.Config.Clock (or ClusterConfig.Clock) and a
// System's timers, receive timeouts and cron schedules fire when the test
// says, without sleeping.
//
// The functions the System gives AfterFunc run on the goroutine that
// calls Advance, in deadline order, with Now set to their deadline. A
// timer's message is then queued to its actor, which handles it on its
// own goroutine: after Advance, wait for the effect (a Probe's
// ExpectMessage), do not assume it already happened.
type FakeClock struct{ c *fakeclock.Clock }

var _ actor.Clock = (*FakeClock)(nil)

// NewFakeClock returns a fake clock at 2030-01-01 00:00 UTC.
func NewFakeClock() *FakeClock { return &FakeClock{c: fakeclock.New()} }

// Now is the fake time.
func (c *FakeClock) Now() time.Time { return c.c.Now() }

// AfterFunc records f to be called by Advance once d has passed on this
// clock; the returned function cancels it and reports whether it did so
// before f was called.
func (c *FakeClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return c.c.AfterFunc(d, f)
}

// Advance moves the time forward by d, calling every function that comes
// due on the way, in deadline order.
func (c *FakeClock) Advance(d time.Duration) { c.c.Advance(d) }

// Next is the earliest deadline pending, and false when none is.
func (c *FakeClock) Next() (time.Time, bool) { return c.c.Next() }
