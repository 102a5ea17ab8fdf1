package remote_test

// The call path with no tracer configured and no span in the caller's
// ctx: its allocations must be those of the same path before tracing
// existed (this file builds on a tree without it, to compare):
//
//	go test -run '^$' -bench 'CallNoTracer|CallTraced' -benchmem -count 6 ./remote | tee trace.txt; benchstat trace.txt

import (
	"context"
	"testing"

	"github.com/mailroom-go/mailroom/internal/testing/testpb"
)

// BenchmarkCallNoTracer: one call at a time to the child's "echo", the
// caller's ctx without a span, its node without a TracerProvider.
func BenchmarkCallNoTracer(b *testing.B) {
	sys := benchPair(b)
	arg := &testpb.Echo{Text: "x"}
	ctx, cancel := context.WithCancel(context.Background()) // a ctx as callers have: not Background
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := sys.Call(ctx, "b", "echo", arg); err != nil {
			b.Fatal(err)
		}
	}
}
