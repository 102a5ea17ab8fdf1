package idempotency

import (
	"context"
	"strconv"

	"github.com/mailroom-go/mailroom/actor"
)

// HeaderKey is the message header that carries a call's idempotency key
// (actor.WithHeader): it travels to other nodes with the call, request
// or send, as every header does.
const HeaderKey = "mailroom-idempotency-key"

// WithKey is ctx carrying key as the idempotency key of the calls and
// requests made with it (the HeaderKey header). Every attempt of one
// logical operation carries the same key: a retry made with the same
// ctx does. The callee checks it (1 to MaxKeyBytes bytes; a bad key is
// refused with ErrBadKey, not executed).
func WithKey(ctx context.Context, key string) context.Context {
	return actor.WithHeader(ctx, HeaderKey, key)
}

// KeyFrom is the idempotency key ctx carries: the one WithKey set, or,
// in a function's handler, the one its call carried.
func KeyFrom(ctx context.Context) (string, bool) {
	return actor.HeadersFrom(ctx).Get(HeaderKey)
}

// HeaderAttempt is the message header that carries the attempt number of
// a keyed call (WithAttempt; none: 0).
const HeaderAttempt = "mailroom-idempotency-attempt"

// WithAttempt is ctx carrying n as the attempt number of its keyed calls.
// Status fences a key only up to the attempt its ctx carries: after it
// answered never ran, a late copy of that attempt (or an earlier one) is
// refused, and the call made again with a higher attempt runs, under
// the same key, on the same node:
//
//	st, err := idempotency.Status(ctx, sys, node, key, inc)
//	if err == nil && st.State == idempotency.NeverRan {
//		ctx = idempotency.WithAttempt(ctx, idempotency.AttemptFrom(ctx)+1)
//		res, err = sys.Call(ctx, node, fn, arg)
//	}
func WithAttempt(ctx context.Context, n uint64) context.Context {
	return actor.WithHeader(ctx, HeaderAttempt, strconv.FormatUint(n, 10))
}

// AttemptFrom is the attempt number ctx carries (WithAttempt, or a
// function's call); 0 when none, or when it is not a number.
func AttemptFrom(ctx context.Context) uint64 { return attemptOf(actor.HeadersFrom(ctx)) }

func attemptOf(h actor.Headers) uint64 {
	v, ok := h.Get(HeaderAttempt)
	if !ok {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0 // the lowest: refused by any fence
	}
	return n
}
