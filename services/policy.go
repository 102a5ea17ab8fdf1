package services

import (
	"fmt"
	"time"
)

// RetryPolicy says how a call is retried. A zero field is "not set
// here": it is taken from the next level down, field by field, so a
// caller that sets one field keeps every other field of the provider's
// policy. The levels, first set value wins:
//
//  1. the call's options (WithBudget, WithBackoff, ..., WithRetry);
//  2. the provider's defaults for the service (Service.Defaults.Retry),
//     as announced by the provider the first attempt resolved;
//  3. the calling node's defaults (Config.Retry);
//  4. the package defaults (DefaultRetryPolicy).
//
// Only failures that did not execute are retried by themselves; a
// failure that may have executed is retried only when the provider
// declared the function idempotent; an executed result (a rejection, a
// panic) is never retried. See the package documentation.
type RetryPolicy struct {
	// Budget is how long after the first attempt started a new attempt
	// may still start. It is an absolute deadline fixed at the first
	// attempt: no attempt starts at or after it, and a pause that would
	// end at or after it is not taken (the call fails at once). It does
	// not cut an attempt short: use ctx or the provider's Deadline.
	Budget time.Duration
	// Backoff is the pause before the second attempt; each later pause
	// doubles, up to MaxBackoff.
	Backoff time.Duration
	// MaxBackoff caps the pause between attempts.
	MaxBackoff time.Duration
	// MaxAttempts caps the number of attempts, the first included: 1
	// means no retries, Unlimited means the budget alone decides.
	MaxAttempts int
}

// Unlimited as RetryPolicy.MaxAttempts: no cap besides the budget.
const Unlimited = -1

// DefaultRetryPolicy is the last level of the merge: Budget 30s,
// Backoff 25ms, MaxBackoff 1s, MaxAttempts Unlimited (the budget alone
// decides).
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		Budget:      30 * time.Second,
		Backoff:     25 * time.Millisecond,
		MaxBackoff:  time.Second,
		MaxAttempts: Unlimited,
	}
}

// over returns p with every zero field taken from base.
func (p RetryPolicy) over(base RetryPolicy) RetryPolicy {
	if p.Budget == 0 {
		p.Budget = base.Budget
	}
	if p.Backoff == 0 {
		p.Backoff = base.Backoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = base.MaxBackoff
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = base.MaxAttempts
	}
	return p
}

// validate checks the fields that are set; where names the level.
func (p RetryPolicy) validate(where string) error {
	switch {
	case p.Budget < 0:
		return fmt.Errorf("services: %s.Budget is %v, want a positive duration (0: inherit)", where, p.Budget)
	case p.Backoff < 0:
		return fmt.Errorf("services: %s.Backoff is %v, want a positive duration (0: inherit)", where, p.Backoff)
	case p.MaxBackoff < 0:
		return fmt.Errorf("services: %s.MaxBackoff is %v, want a positive duration (0: inherit)", where, p.MaxBackoff)
	case p.MaxAttempts < Unlimited:
		return fmt.Errorf("services: %s.MaxAttempts is %d, want 1 or more, Unlimited (-1) or 0 (inherit)", where, p.MaxAttempts)
	}
	return nil
}

// pause is the wait after attempt n (1-based) failed.
func (p RetryPolicy) pause(n int) time.Duration {
	d := p.Backoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, max(p.MaxBackoff, p.Backoff))
}

// attemptsLeft reports whether attempt n+1 is allowed by MaxAttempts.
func (p RetryPolicy) attemptsLeft(n int) bool {
	return p.MaxAttempts <= 0 || n < p.MaxAttempts
}

// Policy is what one call runs with: the merged retry policy and the
// function's contract.
type Policy struct {
	Retry RetryPolicy
	// Idempotent: the provider declared the function safe to run twice,
	// so may-have-executed failures are retried too.
	Idempotent bool
	// Deadline is the longest one attempt may run, the provider's
	// contract for the function (0: none). The caller's ctx can only
	// shorten it.
	Deadline time.Duration
}

func (p Policy) String() string {
	att := "unlimited"
	if p.Retry.MaxAttempts > 0 {
		att = fmt.Sprint(p.Retry.MaxAttempts)
	}
	return fmt.Sprintf("budget %v, backoff %v..%v, attempts %s, idempotent %v, deadline %v",
		p.Retry.Budget, p.Retry.Backoff, p.Retry.MaxBackoff, att, p.Idempotent, p.Deadline)
}
