package stats

import (
	"math"
	"sync"
	"testing"
	"time"
)

func TestBucketsAreMonotonicAndContiguous(t *testing.T) {
	prev := -1
	for v := int64(0); v < 1<<20; v += 1 + v/64 {
		b := bucket(v)
		if b < prev {
			t.Fatalf("bucket(%d)=%d below previous %d", v, b, prev)
		}
		if lo, hi := lowerBound(b), lowerBound(b+1); v < lo || v >= hi {
			t.Fatalf("v=%d in bucket %d [%d,%d)", v, b, lo, hi)
		}
		prev = b
	}
}

func TestQuantileUniform(t *testing.T) {
	var h Hist
	for i := 1; i <= 10000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 5000}, {0.9, 9000}, {0.99, 9900}} {
		got := float64(h.Quantile(c.q)) / float64(time.Microsecond)
		if math.Abs(got-c.want)/c.want > 1.0/subBuckets {
			t.Errorf("q%.2f = %.0fµs, want %.0f within %.1f%%", c.q, got, c.want, 100.0/subBuckets)
		}
	}
	if h.Count() != 10000 || h.Max() != 10000*time.Microsecond {
		t.Errorf("count %d max %v", h.Count(), h.Max())
	}
	if q := h.Quantile(1); q > h.Max() {
		t.Errorf("q1 %v above max %v", q, h.Max())
	}
}

func TestQuantileEmptyAndReset(t *testing.T) {
	var h Hist
	if h.Quantile(0.5) != 0 {
		t.Fatal("empty histogram has a median")
	}
	h.Record(time.Second)
	h.Reset()
	if h.Count() != 0 || h.Quantile(0.99) != 0 {
		t.Fatal("reset kept values")
	}
}

func TestConcurrentRecord(t *testing.T) {
	var h Hist
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				h.Record(time.Duration(g*1000+i) * time.Nanosecond)
			}
		}()
	}
	wg.Wait()
	if h.Count() != 8000 || h.Max() != 7999 {
		t.Fatalf("count %d max %d", h.Count(), h.Max())
	}
}

func TestMedian(t *testing.T) {
	cases := []struct {
		in   []float64
		want float64
		idx  int
	}{
		{nil, 0, -1},
		{[]float64{3}, 3, 0},
		{[]float64{5, 1, 3}, 3, 2},
		{[]float64{4, 1, 3, 2}, 2.5, 3},
	}
	for _, c := range cases {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		if got := MedianIndex(c.in); got != c.idx {
			t.Errorf("MedianIndex(%v) = %v, want %v", c.in, got, c.idx)
		}
	}
}
