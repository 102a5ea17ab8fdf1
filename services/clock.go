package services

import (
	"context"
	"time"
)

// Clock is the time the retry loop runs on: when attempts start, how
// long the pauses between them are, and when the budget ends. Tests
// inject a fake one; Config.Clock defaults to the real clock. Deadlines
// that travel with a call (ctx, the provider's Deadline) are wall-clock
// times and do not use it.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// Sleep waits d, or returns ctx.Err() if ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
