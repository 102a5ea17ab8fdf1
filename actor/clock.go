package actor

import "time"

// Clock is the time source of a System's timers, receive timeouts and
// schedules. The default is the wall clock; a test passes a fake one
// (the testkit's) to drive time by hand instead of sleeping.
//
// AfterFunc calls f once, on a goroutine of the clock's, when d has
// passed on this clock; the returned stop function cancels it and reports
// whether it did so before f was called (as time.Timer.Stop). f is
// never called before AfterFunc has returned, even for d <= 0 (the
// System calls AfterFunc holding the lock f takes). A System
// keeps at most one AfterFunc pending at a time, for its earliest
// deadline, so a fake clock never has to hold many.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// WallClock is the real clock: time.Now and time.AfterFunc.
type WallClock struct{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }

// AfterFunc calls f after d with time.AfterFunc.
func (WallClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}
