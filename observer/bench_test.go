package observer

import (
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
)

// BenchmarkSample is what the charts cost the node while nobody watches:
// one sample of a node linked to a peer with a pool (readPoint), taken
// every Options.SeriesEvery; and turning a full ring of 300 samples into
// charts (series), once per snapshot.
//
//	go test -run '^$' -bench Sample -benchmem -count 6 ./observer/
func BenchmarkSample(b *testing.B) {
	a, p := startNode(b, "a"), startNode(b, "b")
	if err := a.n.Connect(ctxT(b), "b", p.n.Addr()); err != nil {
		b.Fatal(err)
	}
	clock := actor.WallClock{}
	b.Run("point", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = readPoint(a.n, a.pool, clock)
		}
	})
	b.Run("series300", func(b *testing.B) {
		s := newSampler(newFakeClock(), time.Second, 300, func() point { return readPoint(a.n, a.pool, clock) }, func() bool { return false })
		defer s.stop()
		for range 300 {
			s.mu.Lock()
			s.add(readPoint(a.n, a.pool, clock))
			s.mu.Unlock()
		}
		b.ReportAllocs()
		for b.Loop() {
			_ = s.series()
		}
	})
}
