package remote

import (
	"context"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/wire"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Tracing (README, "Tracing"). A send, cast, call or request whose
// caller's ctx holds a valid span context travels as a traced frame
// carrying it (SPEC.md), whether or not this node has a TracerProvider:
// propagation is what lets the callee continue the trace. With a
// provider the node also makes spans: a client (call, request) or
// producer (send, cast) span around the operation, whose context is the
// one carried, and on the receiving node a server or consumer span
// whose parent is the carried context; the handler's context holds it.
// Without a provider the handler's context holds the remote span context
// itself. mailroom never starts a trace: without a span in the caller's
// ctx nothing is carried and nothing is made, and that path costs one
// context lookup and no allocation (BenchmarkCallNoTracer).

// instrumentationName names the tracer mailroom asks its provider for.
const instrumentationName = "github.com/mailroom-go/mailroom"

// Span attribute keys. Their values are bounded by what the cluster
// defines (node, function, name and type names), never payloads or PIDs:
// a span a peer's frame makes names only what exists on this node (a
// registered function or name, a registered type: decoding checked it)
// and the peer's node name (checked at the handshake); a frame for a
// function or name this node does not have makes a span of a fixed name,
// with neither (spanFor).
const (
	attrPeer    = attribute.Key("mailroom.peer")         // the node at the other end
	attrFn      = attribute.Key("mailroom.function")     // cast, call
	attrName    = attribute.Key("mailroom.name")         // a send or request to a registered name
	attrType    = attribute.Key("mailroom.message_type") // the payload's protobuf full name
	attrOutcome = attribute.Key("mailroom.outcome")      // a failure's actor.Outcome, as its Label
)

func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(instrumentationName)
}

// spanName is "mailroom.<kind> <function, name or message type>".
func spanName(el *wire.Element) string {
	what := el.Fn
	switch {
	case el.Kind == wire.KindCast || el.Kind == wire.KindCall:
	case el.ToName != "":
		what = el.ToName
	default:
		what = el.Type
	}
	if what == "" {
		return "mailroom." + el.Kind.String()
	}
	return "mailroom." + el.Kind.String() + " " + what
}

func spanAttrs(peer string, el *wire.Element) trace.SpanStartEventOption {
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, attrPeer.String(peer))
	switch {
	case el.Fn != "":
		attrs = append(attrs, attrFn.String(el.Fn))
	case el.ToName != "":
		attrs = append(attrs, attrName.String(el.ToName))
	}
	if el.Type != "" {
		attrs = append(attrs, attrType.String(el.Type))
	}
	return trace.WithAttributes(attrs...)
}

// traceOut sets el's trace from ctx's span, if ctx holds a valid one,
// and returns the client or producer span n's tracer made for it (nil
// without a provider or without a span): the caller ends it with endSpan.
func traceOut(ctx context.Context, n *Node, peer string, el *wire.Element) trace.Span {
	if ctx == context.Background() {
		return nil // the common case, without a lookup
	}
	el.Headers = actor.HeadersFrom(ctx) // headers travel with or without a trace
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	var sp trace.Span
	if n.tracer != nil {
		kind := trace.SpanKindProducer
		if el.Kind == wire.KindCall || el.Kind == wire.KindRequest {
			kind = trace.SpanKindClient
		}
		_, sp = n.tracer.Start(ctx, spanName(el), trace.WithSpanKind(kind), spanAttrs(peer, el))
		if own := sp.SpanContext(); own.IsValid() {
			sc = own
		}
	}
	el.Trace = wire.Trace{ID: sc.TraceID(), Span: sc.SpanID(), Flags: uint8(sc.TraceFlags()), State: sc.TraceState().String()}
	return sp
}

// traceIn is base continuing the trace el carried (el.Trace not zero):
// with a provider, a server (call, request) or consumer (send, cast)
// span whose parent is the carried span context, returned for the
// caller to end; without one, the remote span context alone. The
// headers el carried are in the context too (actor.HeadersFrom); an
// element with headers and no trace gets base with its headers and no
// span.
func traceIn(base context.Context, n *Node, peer string, el *wire.Element) (context.Context, trace.Span) {
	if el.Headers != nil {
		base = actor.WithHeaders(base, el.Headers)
	}
	if el.Trace.IsZero() {
		return base, nil
	}
	cfg := trace.SpanContextConfig{
		TraceID:    el.Trace.ID,
		SpanID:     el.Trace.Span,
		TraceFlags: trace.TraceFlags(el.Trace.Flags),
		Remote:     true,
	}
	if el.Trace.State != "" {
		// A tracestate that does not parse is dropped, as W3C asks; the
		// trace itself goes on.
		cfg.TraceState, _ = trace.ParseTraceState(el.Trace.State)
	}
	ctx := trace.ContextWithRemoteSpanContext(base, trace.NewSpanContext(cfg))
	if n.tracer == nil {
		return ctx, nil
	}
	kind := trace.SpanKindConsumer
	if el.Kind == wire.KindCall || el.Kind == wire.KindRequest {
		kind = trace.SpanKindServer
	}
	name, attrs := spanFor(n, peer, el)
	return n.tracer.Start(ctx, name, trace.WithSpanKind(kind), attrs)
}

// spanFor is the name and attributes of the span an inbound element
// makes: its function or registered name only when n has it (a peer may
// send any name); else "mailroom.<kind> (unknown target)".
func spanFor(n *Node, peer string, el *wire.Element) (string, trace.SpanStartEventOption) {
	known := true
	switch {
	case el.Kind == wire.KindCast || el.Kind == wire.KindCall:
		_, known = actorhooks.Function(n.sys, el.Fn)
	case el.ToName != "":
		_, known = n.sys.Lookup(el.ToName)
	}
	if known {
		return spanName(el), spanAttrs(peer, el)
	}
	anon := wire.Element{Kind: el.Kind, Type: el.Type}
	return "mailroom." + el.Kind.String() + " (unknown target)", spanAttrs(peer, &anon)
}

// carries reports whether el carries a trace or headers: what makes its
// handler's context its own (traceIn).
func carries(el *wire.Element) bool { return !el.Trace.IsZero() || el.Headers != nil }

// inTrace is the trace an inbound call carried: the context its
// handler's ctx answers Value from, and its server span (nil: none).
type inTrace struct {
	ctx  context.Context
	span trace.Span
}

// endSpan ends sp (nil: none), marking it failed with err's outcome.
func endSpan(sp trace.Span, err error) {
	if sp == nil {
		return
	}
	if err != nil {
		sp.SetStatus(codes.Error, err.Error())
		sp.SetAttributes(attrOutcome.String(actor.Outcome(err).Label()))
	}
	sp.End()
}
