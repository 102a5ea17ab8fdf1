package actor

import "github.com/mailroom-go/mailroom/internal/testing/fakeclock"

// What the actor_test package's tests need from inside.

// PendingTimers is the number of timers s's scheduler holds.
func PendingTimers(s *System) int { return s.timers.pending() }

// FakeClock is a Clock whose time moves only when a test advances it
// (internal/testing/fakeclock; the public one is mailroomtest.FakeClock).
type FakeClock = fakeclock.Clock

// NewFakeClock returns a fake clock at 2030-01-01 00:00 UTC.
func NewFakeClock() *FakeClock { return fakeclock.New() }
