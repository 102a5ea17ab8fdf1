package idempotency

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testnode.SetChildPreHook(childSetup)
	testnode.MaybeRunChild()
	goleak.VerifyTestMain(m)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestARepeatWhileRunningWaitsForTheFirstResult: the second attempt of a
// key does not run the handler; it waits for the first and gets its reply.
func TestARepeatWhileRunningWaitsForTheFirstResult(t *testing.T) {
	g := NewGuard(NewMemory(MemoryConfig{}), 1)
	var runs atomic.Int32
	release, started := make(chan struct{}), make(chan struct{})
	first := make(chan []byte, 1)
	go func() {
		r, err := g.Run(ctxT(t), "job-1", func(context.Context) ([]byte, error) {
			runs.Add(1)
			close(started)
			<-release
			return []byte("first"), nil
		})
		require.NoError(t, err)
		first <- r
	}()
	<-started
	second := make(chan []byte, 1)
	go func() {
		r, err := g.Run(ctxT(t), "job-1", func(context.Context) ([]byte, error) {
			runs.Add(1)
			return []byte("second"), nil
		})
		require.NoError(t, err)
		second <- r
	}()
	st, err := g.Status("job-1", 1)
	require.NoError(t, err)
	require.Equal(t, Running, st.State)
	close(release)
	require.Equal(t, "first", string(<-first))
	require.Equal(t, "first", string(<-second), "the repeat got the first result")
	require.Equal(t, int32(1), runs.Load())
	st, err = g.Status("job-1", 1)
	require.NoError(t, err)
	require.Equal(t, Done, st.State)
	require.Equal(t, "first", string(st.Reply))
}

// TestALateCopyAfterNeverRanIsRefused: Status answers never-ran and
// fences the key; the copy arriving after is not executed.
func TestALateCopyAfterNeverRanIsRefused(t *testing.T) {
	g := NewGuard(NewMemory(MemoryConfig{}), 1)
	st, err := g.Status("job-2", 1)
	require.NoError(t, err)
	require.Equal(t, NeverRan, st.State)
	ran := false
	_, err = g.Run(ctxT(t), "job-2", func(context.Context) ([]byte, error) { ran = true; return nil, nil })
	require.ErrorIs(t, err, ErrFenced)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	require.False(t, ran)
	st, err = g.Status("job-2", 1)
	require.NoError(t, err)
	require.Equal(t, NeverRan, st.State, "asking again gives the same answer")
}

// TestARecordedErrorIsReturnedAgain: a rejection is recorded; the repeat
// gets it without running.
func TestARecordedErrorIsReturnedAgain(t *testing.T) {
	g := NewGuard(NewMemory(MemoryConfig{}), 1)
	_, err := g.Run(ctxT(t), "k", func(context.Context) ([]byte, error) { return nil, errors.New("poison job") })
	require.ErrorContains(t, err, "poison job")
	_, err = g.Run(ctxT(t), "k", func(context.Context) ([]byte, error) { t.Fatal("ran again"); return nil, nil })
	require.ErrorContains(t, err, "poison job")
}

// TestTheMemoryStoreIsLostWithTheIncarnation: the callee killed mid-
// handler and restarted (a new guard and store, a new incarnation):
// Status about the old incarnation's call is an error that says the
// record was lost, not "never ran".
func TestTheMemoryStoreIsLostWithTheIncarnation(t *testing.T) {
	g1 := NewGuard(NewMemory(MemoryConfig{}), 1)
	started := make(chan struct{})
	ctx, kill := context.WithCancel(context.Background())
	go g1.Run(ctx, "job-3", func(ctx context.Context) ([]byte, error) { close(started); <-ctx.Done(); return nil, ctx.Err() })
	<-started
	g2 := NewGuard(NewMemory(MemoryConfig{}), 2) // the restarted node
	_, err := g2.Status("job-3", 1)
	require.ErrorIs(t, err, ErrRecordLost)
	require.Contains(t, err.Error(), "lost with the incarnation")
	kill()
}

// TestTheDurableStoreAnswersAfterARestart: the callee killed mid-handler
// (its record says running, its process gone: a new store opened on the
// same directory, a new incarnation) answers Interrupted; a finished key
// answers Done with its reply; an unknown key never-ran, then fenced
// across another restart.
func TestTheDurableStoreAnswersAfterARestart(t *testing.T) {
	dir := t.TempDir()
	d1, err := OpenDir(dir, DirConfig{})
	require.NoError(t, err)
	g1 := NewGuard(d1, 1)
	_, err = g1.Run(ctxT(t), "done", func(context.Context) ([]byte, error) { return []byte("receipt"), nil })
	require.NoError(t, err)
	_, claimed, err := d1.Claim("killed", 1) // what Run writes before the handler; then the kill
	require.NoError(t, err)
	require.True(t, claimed)

	d2, err := OpenDir(dir, DirConfig{})
	require.NoError(t, err)
	g2 := NewGuard(d2, 2)
	st, err := g2.Status("killed", 1)
	require.NoError(t, err)
	require.Equal(t, Interrupted, st.State)
	_, err = g2.Run(ctxT(t), "killed", func(context.Context) ([]byte, error) { t.Fatal("ran again"); return nil, nil })
	require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err), "%v", err)
	st, err = g2.Status("done", 1)
	require.NoError(t, err)
	require.Equal(t, Done, st.State)
	require.Equal(t, "receipt", string(st.Reply))
	st, err = g2.Status("never", 1)
	require.NoError(t, err)
	require.Equal(t, NeverRan, st.State)

	d3, err := OpenDir(dir, DirConfig{})
	require.NoError(t, err)
	_, err = NewGuard(d3, 3).Run(ctxT(t), "never", func(context.Context) ([]byte, error) { t.Fatal("ran"); return nil, nil })
	require.ErrorIs(t, err, ErrFenced, "the fence survives the restart")
}

// TestKeysAreBounded: a hostile caller cannot fill the store: keys over
// MaxKeyBytes are refused; past MaxKeys or MaxBytes new keys are refused,
// not executed, and the handler does not run; expired records free room.
func TestKeysAreBounded(t *testing.T) {
	now := time.Unix(0, 0)
	m := NewMemory(MemoryConfig{MaxKeys: 10, MaxBytes: 10 * (64 + 8 + 2), TTL: time.Minute, Now: func() time.Time { return now }})
	g := NewGuard(m, 1)
	_, err := g.Run(ctxT(t), strings.Repeat("k", MaxKeyBytes+1), func(context.Context) ([]byte, error) { return nil, nil })
	require.ErrorIs(t, err, ErrBadKey)
	for i := range 10 {
		_, err := g.Run(ctxT(t), "key-"+string(rune('a'+i)), func(context.Context) ([]byte, error) { return nil, nil })
		require.NoError(t, err)
	}
	_, err = g.Run(ctxT(t), "key-z", func(context.Context) ([]byte, error) { t.Fatal("ran"); return nil, nil })
	require.ErrorIs(t, err, ErrStoreFull)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	require.Equal(t, 10, m.Len())
	big := NewGuard(NewMemory(MemoryConfig{MaxBytes: 1000}), 1)
	_, err = big.Run(ctxT(t), "a", func(context.Context) ([]byte, error) { return make([]byte, 2000), nil })
	require.Error(t, err, "a reply over the byte bound is not kept, and the caller is told")
	now = now.Add(2 * time.Minute)
	_, err = g.Run(ctxT(t), "key-z", func(context.Context) ([]byte, error) { return nil, nil })
	require.NoError(t, err, "expired records made room")
}
