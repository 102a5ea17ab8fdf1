package services

import (
	"time"

	"github.com/mailroom-go/mailroom/actor"
)

// CallOption is a per-call knob. Retry options set one field of the
// call's RetryPolicy each; every field left alone keeps the provider's
// value (see RetryPolicy for the levels).
type CallOption func(*callOptions)

type callOptions struct {
	retry  RetryPolicy
	sender *actor.Sender
}

// WithBudget sets RetryPolicy.Budget for this call.
func WithBudget(d time.Duration) CallOption { return func(o *callOptions) { o.retry.Budget = d } }

// WithBackoff sets RetryPolicy.Backoff for this call.
func WithBackoff(d time.Duration) CallOption { return func(o *callOptions) { o.retry.Backoff = d } }

// WithMaxBackoff sets RetryPolicy.MaxBackoff for this call.
func WithMaxBackoff(d time.Duration) CallOption {
	return func(o *callOptions) { o.retry.MaxBackoff = d }
}

// WithMaxAttempts sets RetryPolicy.MaxAttempts for this call.
func WithMaxAttempts(n int) CallOption { return func(o *callOptions) { o.retry.MaxAttempts = n } }

// NoRetry makes one attempt only (MaxAttempts 1).
func NoRetry() CallOption { return WithMaxAttempts(1) }

// WithRetry sets every non-zero field of p for this call; zero fields
// keep the provider's values. It never replaces the whole policy.
func WithRetry(p RetryPolicy) CallOption {
	return func(o *callOptions) { o.retry = p.over(o.retry) }
}

// Via makes the call from the sender handle h (its own ordering and, with
// a proxy pool, its own proxy) instead of the System's root handle.
// Without it, calls already use every proxy of the pool: calls from the
// root handle need no order between them and are spread over the
// proxies, so an HTTP handler's goroutines need no sender of their own.
func Via(h *actor.Sender) CallOption { return func(o *callOptions) { o.sender = h } }
