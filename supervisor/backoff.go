package supervisor

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff delays the restarts of a child that keeps failing: the n-th
// restart in a row waits Min x 2^(n-1), at most Max, less a random part
// of up to Jitter of it, so that children failing together do not all
// come back at once. A child that ran at least ResetAfter before it
// ended starts again from Min.
//
// How it counts in the intensity rules: a failure counts toward
// Intensity when the child ends, as without a backoff, not when the
// delayed restart happens; a supervisor gives up on the failure that
// exceeds Intensity within Period, whatever restarts are still waiting.
// Choose Period longer than the delays (or Intensity higher) if a
// backed-off child should keep being restarted. While a restart waits,
// the children it restarts (the failed one, or its group under
// OneForAll and RestForOne) are not running, and other restarts the
// supervisor owes wait with it. The delay runs on the System's clock
// (actor.Config.Clock), so a test drives it with a fake one.
type Backoff struct {
	// Min is the first delay. Required: more than 0.
	Min time.Duration
	// Max caps the delay. 0 means 32 x Min; otherwise at least Min.
	Max time.Duration
	// Jitter, from 0 to 1, is the part of each delay that is random:
	// the delay is drawn uniformly from [d x (1-Jitter), d]. Default 0.
	Jitter float64
	// ResetAfter: a child that ran this long before it ended is
	// restarted after Min again. 0 means Max.
	ResetAfter time.Duration
}

func (b *Backoff) validate(at, id string) error {
	switch {
	case b.Min <= 0:
		return &SpecError{Field: at + ".Backoff.Min", Problem: fmt.Sprintf("is %s for child %q, want more than 0", b.Min, id)}
	case b.Max != 0 && b.Max < b.Min:
		return &SpecError{Field: at + ".Backoff.Max", Problem: fmt.Sprintf("is %s for child %q, want 0 (32 x Min) or at least Min (%s)", b.Max, id, b.Min)}
	case b.Jitter < 0 || b.Jitter > 1 || b.Jitter != b.Jitter:
		return &SpecError{Field: at + ".Backoff.Jitter", Problem: fmt.Sprintf("is %v for child %q, want 0 to 1", b.Jitter, id)}
	case b.ResetAfter < 0:
		return &SpecError{Field: at + ".Backoff.ResetAfter", Problem: fmt.Sprintf("is %s for child %q, want 0 (Max) or more", b.ResetAfter, id)}
	}
	return nil
}

func (b *Backoff) max() time.Duration {
	if b.Max == 0 {
		return 32 * b.Min
	}
	return b.Max
}

func (b *Backoff) resetAfter() time.Duration {
	if b.ResetAfter == 0 {
		return b.max()
	}
	return b.ResetAfter
}

// delay is the wait before the n-th restart in a row (n >= 1); r is a
// uniform draw from [0, 1).
func (b *Backoff) delay(n int, r float64) time.Duration {
	d, limit := b.Min, b.max()
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d - time.Duration(float64(d)*b.Jitter*r)
}

// backoffDue is the supervisor's timer message: the restarts that waited
// for a backoff are due.
type backoffDue struct{}

// backoffKey is the key of the supervisor's one backoff timer.
type backoffKey struct{}

// backoff returns how long the restart after ch's failure waits, and
// counts the failure in ch's run of failures.
func (s *supervisor) backoff(ch *child) time.Duration {
	b := ch.spec.Backoff
	if b == nil {
		return 0
	}
	if s.clock.Now().Sub(ch.started) >= b.resetAfter() {
		ch.failures = 0
	}
	ch.failures++
	return b.delay(ch.failures, rand.Float64())
}
