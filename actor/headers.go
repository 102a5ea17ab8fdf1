package actor

import "context"

// Header is one string header of a message: a key and its value.
type Header struct {
	Key, Value string
}

// Headers are the string headers a message carries (WithHeader), in the
// order they were set, keys unique. They travel with a message to
// another node (internal/wire/SPEC.md, "headered"), bounded there by
// MaxHeaders and MaxHeaderBytes: a message over either bound is refused
// before it is sent (ErrBadMessage, not executed). A Headers value is
// never changed once made; WithHeader makes a new one.
type Headers []Header

// MaxHeaders and MaxHeaderBytes bound the headers of a message that
// crosses the wire: at most MaxHeaders of them, whose keys and values
// together hold at most MaxHeaderBytes bytes. A peer that sends more has
// its link closed.
const (
	MaxHeaders     = 32
	MaxHeaderBytes = 4096
)

// Get is the value of key, and whether h holds it.
func (h Headers) Get(key string) (string, bool) {
	for i := range h {
		if h[i].Key == key {
			return h[i].Value, true
		}
	}
	return "", false
}

// Size is the bytes of h's keys and values, what MaxHeaderBytes bounds.
func (h Headers) Size() int {
	n := 0
	for i := range h {
		n += len(h[i].Key) + len(h[i].Value)
	}
	return n
}

type headersKey struct{}

// WithHeader is ctx carrying the header key with value, replacing the
// value an earlier WithHeader set for key. A Send (SendContext), Request,
// Call or Cast made with the returned ctx carries the headers ctx holds;
// the target reads them with Context.Headers (an actor) or HeadersFrom
// (a function's ctx). Headers are not inherited by what the target sends
// in turn: send middleware sets them where they should be.
func WithHeader(ctx context.Context, key, value string) context.Context {
	old := HeadersFrom(ctx)
	h := make(Headers, 0, len(old)+1)
	for _, x := range old {
		if x.Key != key {
			h = append(h, x)
		}
	}
	return context.WithValue(ctx, headersKey{}, append(h, Header{Key: key, Value: value}))
}

// WithHeaders is ctx carrying exactly h (nil: none), replacing the
// headers ctx held. h must not be changed afterwards.
func WithHeaders(ctx context.Context, h Headers) context.Context {
	return context.WithValue(ctx, headersKey{}, h)
}

// HeadersFrom is the headers ctx carries: those set with WithHeader,
// or, in a function's handler, those its call or cast carried.
func HeadersFrom(ctx context.Context) Headers {
	if ctx == context.Background() {
		return nil // the common case, without a lookup
	}
	h, _ := ctx.Value(headersKey{}).(Headers)
	return h
}

// Headers is the headers of the message being handled (nil: none).
func (c *Context) Headers() Headers {
	if c.tr == nil {
		return nil
	}
	return c.tr.hdr
}
