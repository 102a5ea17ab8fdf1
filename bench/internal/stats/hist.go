package stats

import (
	"math"
	"math/bits"
	"sort"
	"sync/atomic"
	"time"
)

// subBuckets per power of two: 128 gives buckets 1/128 of their value
// wide, so a percentile (a bucket's midpoint) is within 0.4 % of the
// true value: fine enough to compare a 60 µs round trip with another
// within a few percent.
const (
	subBits    = 7
	subBuckets = 1 << subBits
	maxExp     = 40 // up to 2^40 ns, about 18 minutes
	numBuckets = (maxExp + 1) * subBuckets
)

// Hist is a latency histogram in nanoseconds, safe for concurrent Record.
// The zero value is ready to use.
type Hist struct {
	counts [numBuckets]atomic.Uint64
	n      atomic.Uint64
	max    atomic.Int64
}

// bucket maps v >= 0 to its bucket: values below subBuckets get their own
// bucket; above, the top subBits+1 bits pick it.
func bucket(v int64) int {
	if v < subBuckets {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	e := bits.Len64(uint64(v)) - subBits - 1 // shift that leaves subBits+1 bits
	i := (e+1)*subBuckets + int(uint64(v)>>e) - subBuckets
	if i >= numBuckets {
		return numBuckets - 1
	}
	return i
}

// lowerBound is the smallest value of bucket i.
func lowerBound(i int) int64 {
	if i < subBuckets {
		return int64(i)
	}
	e := i/subBuckets - 1
	return int64(subBuckets+i%subBuckets) << e
}

// Record adds one duration.
func (h *Hist) Record(d time.Duration) {
	v := int64(d)
	h.counts[bucket(v)].Add(1)
	h.n.Add(1)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// Count is the number of values recorded.
func (h *Hist) Count() uint64 { return h.n.Load() }

// Max is the largest value recorded.
func (h *Hist) Max() time.Duration { return time.Duration(h.max.Load()) }

// Reset forgets everything (not concurrently with Record).
func (h *Hist) Reset() {
	for i := range h.counts {
		h.counts[i].Store(0)
	}
	h.n.Store(0)
	h.max.Store(0)
}

// Quantile returns the value below which a fraction q (0..1) of the
// recorded values lie: the midpoint of the bucket holding that rank,
// never above Max. Zero when empty.
func (h *Hist) Quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			lo, hi := lowerBound(i), lowerBound(i+1)
			mid := lo + (hi-lo)/2
			return time.Duration(min(mid, h.max.Load()))
		}
	}
	return h.Max()
}

// Median returns the median of xs (the mean of the middle two for an
// even count), or 0 for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// MedianIndex returns the index in xs of the value closest to its median
// (the lower middle for an even count), or -1 for none: the run a
// report shows as representative.
func MedianIndex(xs []float64) int {
	if len(xs) == 0 {
		return -1
	}
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	return idx[(len(xs)-1)/2]
}
