package actor

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// Tracing in the actor core is only carrying: the spans are the remote
// layer's (remote.Config.TracerProvider). A message handed to an actor
// with a trace travels in its mailbox as a *traced (the envelope keeps
// its size: the local path pays nothing), unwrapped when the actor takes
// it: Context.Context returns the trace, and what the actor sends while
// it handles the message continues it.

// traced is a message with the trace its handler continues and the
// headers it carries (headers.go): ctx holds the trace alone
// (context.Background() for none), so that what the handler sends
// continues the trace without inheriting the headers.
type traced struct {
	msg any
	ctx context.Context
	hdr Headers
}

// withTrace is msg, wrapped with ctx's trace when ctx holds a span and
// with ctx's headers when it holds some.
func withTrace(msg any, ctx context.Context) any {
	if ctx == context.Background() {
		return msg // the common case, without a lookup
	}
	tc, h := traceOnly(ctx), HeadersFrom(ctx)
	if tc == nil && h == nil {
		return msg
	}
	if tc == nil {
		tc = context.Background()
	}
	return &traced{msg: msg, ctx: tc, hdr: h}
}

// traceOnly is ctx's span in a context of its own (none of ctx's
// deadline, cancellation or other values), or nil when ctx holds no
// valid span context: what a local send or cast keeps of its caller's
// ctx.
func traceOnly(ctx context.Context) context.Context {
	if ctx == context.Background() {
		return nil // the common case, without a lookup
	}
	sp := trace.SpanFromContext(ctx)
	if !sp.SpanContext().IsValid() {
		return nil
	}
	return trace.ContextWithSpan(context.Background(), sp)
}

// traceCtx is the context whose trace a Send or Cast from this Context
// carries: the handled message's, or none.
func (c *Context) traceCtx() context.Context {
	if c.tr == nil {
		return context.Background()
	}
	return c.tr.ctx
}

// continueTrace is ctx, or, when ctx holds no span and the message being
// handled carried one, ctx with that span: a Request or Call made while
// handling a traced message continues its trace.
func (c *Context) continueTrace(ctx context.Context) context.Context {
	if c.tr == nil || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	sp := trace.SpanFromContext(c.tr.ctx)
	if !sp.SpanContext().IsValid() {
		return ctx
	}
	return trace.ContextWithSpan(ctx, sp)
}
