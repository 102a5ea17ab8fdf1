package actor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
)

// testSpan is a ctx holding a valid span context, as a caller's would.
func testSpan() (context.Context, trace.SpanContext) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
	})
	ctx, cancel := context.WithCancel(trace.ContextWithSpanContext(context.Background(), sc))
	cancel() // the handler's context keeps the span, not the caller's end
	return ctx, sc
}

// TestLocalMessagesCarryTheirTrace: on one node, a Request or a
// SendContext from a ctx with a span hands the actor that span, and
// nothing else of the ctx; a message without one, Background. The actor
// sees its own message, unwrapped.
func TestLocalMessagesCarryTheirTrace(t *testing.T) {
	s := newSystem(t, "n")
	type seen struct {
		msg any
		sc  trace.SpanContext
		err error
	}
	out := make(chan seen, 4)
	pid, err := s.SpawnFunc(func(c *Context) {
		if m, ok := c.Message().(string); ok {
			out <- seen{m, trace.SpanContextFromContext(c.Context()), c.Context().Err()}
			c.Respond(m)
		}
	})
	require.NoError(t, err)
	ctx, sc := testSpan()

	s.SendContext(ctx, pid, "send")
	got := <-out
	require.Equal(t, "send", got.msg)
	require.Equal(t, sc, got.sc)
	require.NoError(t, got.err, "the sender's cancellation does not travel")

	live, cancel := context.WithCancel(trace.ContextWithSpanContext(context.Background(), sc))
	defer cancel()
	v, err := s.Request(live, pid, "request")
	require.NoError(t, err)
	require.Equal(t, "request", v)
	require.Equal(t, sc, (<-out).sc)

	s.Send(pid, "plain")
	got = <-out
	require.False(t, got.sc.IsValid())
}

// TestATracedPoisonPillStillStops, and a traced message that can never
// be delivered is a dead letter of the message itself.
func TestATracedPoisonPillStillStops(t *testing.T) {
	s := newSystem(t, "n")
	pid, err := s.SpawnFunc(func(c *Context) {})
	require.NoError(t, err)
	ctx, _ := testSpan()
	letters := make(chan DeadLetter, 1)
	defer s.SubscribeDeadLetters(func(d DeadLetter) {
		select {
		case letters <- d:
		default:
		}
	})()
	s.SendContext(ctx, pid, PoisonPill{})
	eventually(t, "stopped", func() bool { return s.NumActors() == 0 })
	s.SendContext(ctx, pid, "late")
	require.Equal(t, "late", (<-letters).Message)
}
