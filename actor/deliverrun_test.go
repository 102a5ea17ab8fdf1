package actor

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// runRecorder records the ints it handles and who sent them, in order; the
// gate, when set, holds it before each one.
type runRecorder struct {
	gate    chan struct{}
	mu      sync.Mutex
	got     []int
	senders []PID
}

func (r *runRecorder) Receive(c *Context) {
	if v, ok := c.Message().(int); ok {
		if r.gate != nil {
			<-r.gate
		}
		r.mu.Lock()
		r.got = append(r.got, v)
		r.senders = append(r.senders, c.Sender())
		r.mu.Unlock()
	}
}

func (r *runRecorder) snapshot() ([]int, []PID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.got...), append([]PID(nil), r.senders...)
}

func runOf(n int) ([]any, []PID) {
	msgs, senders := make([]any, n), make([]PID, n)
	for i := range n {
		msgs[i], senders[i] = i, PID{Node: "peer", Incarnation: 1, ID: uint64(i + 1)}
	}
	return msgs, senders
}

func TestDeliverRunQueuesInOrderByNameOrPID(t *testing.T) {
	s := newSystem(t, "n")
	rec := &runRecorder{}
	pid, err := s.SpawnNamed(PropsFromProducer(func() Actor { return rec }), "rec")
	require.NoError(t, err)
	msgs, senders := runOf(100)
	n, err := s.deliverRun(context.Background(), PID{}, "rec", msgs[:60], senders[:60])
	require.NoError(t, err)
	require.Equal(t, 60, n)
	n, err = s.deliverRun(context.Background(), pid, "", msgs[60:], senders[60:])
	require.NoError(t, err)
	require.Equal(t, 40, n)
	eventually(t, "all handled", func() bool { got, _ := rec.snapshot(); return len(got) == 100 })
	got, from := rec.snapshot()
	for i := range 100 {
		require.Equal(t, i, got[i])
		require.Equal(t, senders[i], from[i], "each message keeps its own sender")
	}

	n, err = s.deliverRun(context.Background(), PID{}, "nobody", msgs, senders)
	require.ErrorIs(t, err, ErrNoProcess)
	require.Zero(t, n)
	n, err = s.deliverRun(context.Background(), PID{Node: "n", Incarnation: s.Incarnation() + 1, ID: pid.ID}, "", msgs, senders)
	require.ErrorIs(t, err, ErrNoProcess, "a PID of another incarnation")
	require.Zero(t, n)
}

func TestDeliverRunRespectsABoundedMailbox(t *testing.T) {
	t.Run("fail fast takes what fits", func(t *testing.T) {
		s := newSystem(t, "n")
		rec := &runRecorder{gate: make(chan struct{})}
		_, err := s.SpawnNamed(PropsFromProducer(func() Actor { return rec }).WithMailbox(10, FailFast), "rec")
		require.NoError(t, err)
		msgs, senders := runOf(25)
		n, err := s.deliverRun(context.Background(), PID{}, "rec", msgs, senders)
		require.ErrorIs(t, err, ErrMailboxFull)
		require.Equal(t, 10, n, "the bound, and not one more")
		close(rec.gate)
		eventually(t, "the ten handled", func() bool { got, _ := rec.snapshot(); return len(got) == 10 })
		got, _ := rec.snapshot()
		require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, got)
	})
	t.Run("block waits for room", func(t *testing.T) {
		s := newSystem(t, "n")
		rec := &runRecorder{}
		_, err := s.SpawnNamed(PropsFromProducer(func() Actor { return rec }).WithMailbox(4, Block), "rec")
		require.NoError(t, err)
		msgs, senders := runOf(1000)
		n, err := s.deliverRun(context.Background(), PID{}, "rec", msgs, senders)
		require.NoError(t, err)
		require.Equal(t, 1000, n)
		eventually(t, "all handled", func() bool { got, _ := rec.snapshot(); return len(got) == 1000 })
		got, _ := rec.snapshot()
		for i := range 1000 {
			require.Equal(t, i, got[i], "in order across the waits")
		}
	})
	t.Run("ctx ends the wait", func(t *testing.T) {
		s := newSystem(t, "n")
		rec := &runRecorder{gate: make(chan struct{})}
		t.Cleanup(func() { close(rec.gate) })
		_, err := s.SpawnNamed(PropsFromProducer(func() Actor { return rec }).WithMailbox(3, Block), "rec")
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		msgs, senders := runOf(10)
		done := make(chan struct{})
		var n int
		go func() {
			defer close(done)
			n, err = s.deliverRun(ctx, PID{}, "rec", msgs, senders)
		}()
		mb := &s.local(mustLookup(t, s, "rec")).mb
		eventually(t, "the run waits for room", func() bool { return mb.waiting.Load() })
		cancel()
		<-done
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 3, n, "what was queued before the wait")
	})
}

func mustLookup(t *testing.T, s *System, name string) PID {
	t.Helper()
	pid, ok := s.Lookup(name)
	require.True(t, ok)
	return pid
}
