package patterns

import (
	"context"
	"strconv"
	"testing"

	"github.com/mailroom-go/mailroom/internal/testing/testpb"
)

// The cost of the machinery (a coordinator, its callers, the supervisor
// round trip) on local calls:
//
//	go test -run '^$' -bench . -benchmem -count 6 ./patterns
func BenchmarkLocal(b *testing.B) {
	_, pt := localNode(b)
	arg := &testpb.Echo{Text: "x"}
	ctx := context.Background()
	for _, n := range []int{1, 3} {
		nodes := make([]string, n)
		for i := range nodes {
			nodes[i] = "a"
		}
		b.Run("CallAll/"+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pt.CallAll(ctx, nodes, "echo", arg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("CallOne/"+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pt.CallOne(ctx, nodes, "echo", arg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
