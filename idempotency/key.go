package idempotency

import (
	"context"

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
