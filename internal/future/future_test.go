package future

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFirstReplyWinsAndLateOnesAreCounted(t *testing.T) {
	var late atomic.Uint64
	f := New(&late)
	require.False(t, f.Completed())
	f.Reply("one", nil)
	f.Reply("two", errors.New("x"))
	require.True(t, f.Completed())
	require.Equal(t, uint64(1), late.Load())
	msg, err, ok := f.Wait(context.Background(), nil)
	require.True(t, ok)
	require.NoError(t, err)
	require.Equal(t, "one", msg)
}

func TestWaitEndsWithCtxAndClaims(t *testing.T) {
	var late atomic.Uint64
	f := New(&late)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, ok := f.Wait(ctx, nil)
	require.False(t, ok, "ctx ended the wait")
	require.True(t, f.Completed())
	f.Reply("too late", nil)
	require.Equal(t, uint64(1), late.Load())
	require.False(t, f.Claim(), "claimed once only")
}

func TestWaitEndsWhenGoneCloses(t *testing.T) {
	var late atomic.Uint64
	f := New(&late)
	gone := make(chan struct{})
	close(gone)
	_, _, ok := f.Wait(context.Background(), gone)
	require.False(t, ok)
}

func TestAReplyThatWonTheRaceIsReturned(t *testing.T) {
	var late atomic.Uint64
	f := New(&late)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.Reply("won", nil) // before the waiter looks: the select may pick either case
	msg, err, ok := f.Wait(ctx, nil)
	require.True(t, ok)
	require.NoError(t, err)
	require.Equal(t, "won", msg)
	require.Zero(t, late.Load())
}
