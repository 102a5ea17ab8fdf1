package remote_test

import (
	"context"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkCallTraced is BenchmarkCallNoTracer with a span in the
// caller's ctx: carried=only, no TracerProvider on the caller (the trace
// context travels, no span is made); carried=spans, the SDK's provider
// (sampling everything, exporting nothing) makes the client span. The
// child callee has no provider: its side only continues the context.
func BenchmarkCallTraced(b *testing.B) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
	})
	for _, c := range []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"carried=only", nil},
		{"carried=spans", sdktrace.NewTracerProvider()},
	} {
		b.Run(c.name, func(b *testing.B) {
			child := testnode.Start(b, testnode.Options{Name: "b"})
			var sys *actor.System
			sys, n := testnode.Local(b, testnode.Options{Name: "a", Seeds: []string{child.Seed()}, TracerProvider: c.tp})
			if err := n.Connect(context.Background(), "b", ""); err != nil {
				b.Fatal(err)
			}
			arg := &testpb.Echo{Text: "x"}
			ctx, cancel := context.WithCancel(trace.ContextWithSpanContext(context.Background(), sc))
			defer cancel()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := sys.Call(ctx, "b", "echo", arg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
