package poolpath

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStatsCountBatchesBySize(t *testing.T) {
	var s Stats
	require.Zero(t, s.MeanBatch())
	s.Observe(1, 10)    // bucket 0
	s.Observe(2, 20)    // bucket 1: (1, 2]
	s.Observe(3, 30)    // bucket 2: (2, 4]
	s.Observe(4, 40)    // bucket 2
	s.Observe(5000, 50) // the last bucket
	require.Equal(t, uint64(5), s.Batches.Load())
	require.Equal(t, uint64(5010), s.Messages.Load())
	require.Equal(t, uint64(150), s.Bytes.Load())
	require.Equal(t, []uint64{1, 1, 2}, []uint64{s.Hist[0].Load(), s.Hist[1].Load(), s.Hist[2].Load()})
	require.Equal(t, uint64(1), s.Hist[len(s.Hist)-1].Load())
	require.InDelta(t, 1002.0, s.MeanBatch(), 1e-9)
}
