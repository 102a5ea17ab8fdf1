package actorhooks_test

import (
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/actorstats"
	"github.com/stretchr/testify/require"
)

// TestSampleMailboxes: a sample finds the deepest mailboxes (a gated
// actor holding its backlog), the busiest actors since the previous
// sample, counts every actor in the histogram, and is shared within
// maxAge instead of walking again.
func TestSampleMailboxes(t *testing.T) {
	sys := start(t)
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)

	// Three gated actors holding 1, 10 and 100 messages behind the one in
	// hand; a fourth, free, takes 50.
	entered := make(chan struct{}, 3)
	gated := func(c *actor.Context) {
		if n, ok := c.Message().(int); ok {
			if n == 0 {
				entered <- struct{}{}
			}
			<-gate
		}
	}
	var stuck []actor.PID
	for i, n := range []int{1, 10, 100} {
		name := []string{"one", "ten", "hundred"}[i]
		pid, err := sys.SpawnNamed(actor.PropsFromFunc(gated), name)
		require.NoError(t, err)
		for j := 0; j <= n; j++ {
			sys.Send(pid, j)
		}
		stuck = append(stuck, pid)
	}
	for range stuck {
		<-entered
	}
	// Each is blocked on its first message, its backlog waiting or in
	// hand: the sample counts both. None takes more until the gate opens.
	first := actorhooks.SampleMailboxes(sys, 2, 0)
	require.Equal(t, 3, first.Actors)
	require.Equal(t, 114, first.Queued)
	require.Zero(t, first.Interval, "the first sample has no interval")
	require.Len(t, first.Deepest, 2, "top 2")
	require.Equal(t, "hundred", first.Deepest[0].Name)
	require.Equal(t, 101, first.Deepest[0].Depth)
	require.Equal(t, stuck[2].ID, first.Deepest[0].ID)
	require.Equal(t, "ten", first.Deepest[1].Name)
	require.Equal(t, 1, first.Hist[actorstats.Bucket(2)])
	require.Equal(t, 1, first.Hist[actorstats.Bucket(11)])
	require.Equal(t, 1, first.Hist[actorstats.Bucket(101)])
	require.Len(t, first.Busiest, 2, "each took at least its first message; top 2")

	free, err := sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {}), "free")
	require.NoError(t, err)
	for j := 0; j < 50; j++ {
		sys.Send(free, j)
	}
	eventually(t, "the free actor drained", func() bool { return sys.MailboxLen(free) == 0 })

	shared := actorhooks.SampleMailboxes(sys, 1, time.Hour)
	require.Equal(t, first.At, shared.At, "a fresh enough sample is shared")
	require.Len(t, shared.Deepest, 1, "cut to the top asked for")

	second := actorhooks.SampleMailboxes(sys, 5, 0)
	require.Equal(t, 4, second.Actors)
	require.Positive(t, second.Interval)
	require.Len(t, second.Busiest, 1, "only the free actor took messages since")
	require.Equal(t, "free", second.Busiest[0].Name)
	require.Equal(t, uint64(50), second.Busiest[0].Taken)
	require.Positive(t, second.Busiest[0].Rate)
	require.Contains(t, second.Busiest[0].Type, "actor.")

	open()
	for _, pid := range stuck {
		eventually(t, "the backlog drained", func() bool { return sys.MailboxLen(pid) == 0 })
	}
	sys.Send(free, -1)
	eventually(t, "the free actor idle", func() bool { return sys.MailboxLen(free) == 0 })
	// Back for more after their batches: nothing in hand, nothing waiting.
	third := actorhooks.SampleMailboxes(sys, 5, 0)
	require.Zero(t, third.Queued)
	require.Empty(t, third.Deepest)
	require.NotEmpty(t, third.Busiest)
}

func TestBucket(t *testing.T) {
	for depth, want := range map[int]int{0: 0, 1: 1, 2: 2, 3: 2, 4: 3, 1 << 13: 14, 1<<14 - 1: 14, 1 << 14: 15, 1 << 30: 15} {
		require.Equal(t, want, actorstats.Bucket(depth), "depth %d", depth)
	}
}

func TestValueIsPerSystem(t *testing.T) {
	type key struct{}
	a, b := start(t), start(t)
	made := 0
	mk := func() any { made++; return new(int) }
	va := actorhooks.Value(a, key{}, mk)
	require.Same(t, va, actorhooks.Value(a, key{}, mk))
	require.NotSame(t, va, actorhooks.Value(b, key{}, mk))
	require.Equal(t, 2, made)
}
