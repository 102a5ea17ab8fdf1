package budget

import (
	"strings"
	"testing"
)

const raw = `PeriodType: cpu nanoseconds
Period: 10000000
Samples:
samples/count cpu/nanoseconds
          2   20000000: 1 2 3
          1   10000000: 4 2 3
          3   30000000: 5 3
          1   10000000: 6
Locations
     1: 0x1 M=1 runtime.mallocgc /x.go:1:0 s=1
     2: 0x2 M=1 google.golang.org/protobuf/proto.MarshalOptions.marshal /x.go:1:0 s=1
             github.com/mailroom-go/mailroom/remote.marshal /x.go:1:0 s=1
     3: 0x3 M=1 github.com/mailroom-go/mailroom/remote.(*Pool).enqueue /x.go:1:0 s=1
     4: 0x4 M=1 runtime.memmove /x.go:1:0 s=1
     5: 0x5 M=1 sync/atomic.(*Int32).Add /x.go:1:0 s=1
             github.com/mailroom-go/mailroom/actor.(*mailbox).push /x.go:1:0 s=1
     6: 0x6 M=1 runtime.asyncPreempt /x.go:1:0 s=1
Mappings
     1: 0x400000/0x800000/0x0 /bin/x
`

func TestParseExpandsInlinedFramesLeafFirst(t *testing.T) {
	s, err := Parse(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 4 || s[0].Nanos != 20000000 {
		t.Fatalf("%+v", s)
	}
	want := []string{"runtime.mallocgc", "google.golang.org/protobuf/proto.MarshalOptions.marshal",
		"github.com/mailroom-go/mailroom/remote.marshal", "github.com/mailroom-go/mailroom/remote.(*Pool).enqueue"}
	if strings.Join(s[0].Stack, ",") != strings.Join(want, ",") {
		t.Fatalf("stack %v, want %v", s[0].Stack, want)
	}
	if _, err := Parse(strings.NewReader("nothing")); err == nil {
		t.Fatal("no samples accepted")
	}
}

// TestSplitIsExclusiveAndOrdered: allocation under the codec counts as
// allocation, the codec's own time as codec, the rest is named after the
// leaf-most mailroom function, and the buckets add up to the total.
func TestSplitIsExclusiveAndOrdered(t *testing.T) {
	s, err := Parse(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	lines, total := Split(s)
	got := map[string]int64{}
	var sum int64
	for _, l := range lines {
		got[l.Bucket] += l.Nanos
		sum += l.Nanos
	}
	want := map[string]int64{
		"allocation (mallocgc, span refill, zeroing)": 20000000,
		"codec: protobuf encode and decode":           10000000,
		"actor.(*mailbox).push":                       30000000,
		"other (runtime, profiler, unattributed)":     10000000,
	}
	for b, n := range want {
		if got[b] != n {
			t.Errorf("%s: %d, want %d (all: %v)", b, got[b], n, got)
		}
	}
	if sum != total || total != 70000000 {
		t.Fatalf("buckets sum to %d, total %d", sum, total)
	}
	if lines[0].Bucket != "actor.(*mailbox).push" {
		t.Fatalf("largest first: %v", lines)
	}
}
