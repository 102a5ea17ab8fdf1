package actor

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// Tracing in the actor core is only carrying: the spans are the remote
// layer's (remote.Config.TracerProvider). A message handed to an actor
// may carry a context (envelope.ctx, Context.Context); what an actor
// sends while it handles one continues its trace. Nothing here runs for
// a message without one but a nil check.

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
	if c.env == nil || c.env.ctx == nil {
		return context.Background()
	}
	return c.env.ctx
}

// continueTrace is ctx, or, when ctx holds no span and the message being
// handled carried one, ctx with that span: a Request or Call made while
// handling a traced message continues its trace.
func (c *Context) continueTrace(ctx context.Context) context.Context {
	if c.env == nil || c.env.ctx == nil || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	sp := trace.SpanFromContext(c.env.ctx)
	if !sp.SpanContext().IsValid() {
		return ctx
	}
	return trace.ContextWithSpan(ctx, sp)
}
