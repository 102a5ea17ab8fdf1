package remote

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// A pending call completes once: by its outcome, or by its caller's ctx
// ending first; the loser learns it lost, and the signal channel it
// waited on is clean for the next call.
func TestPendingCallCompletesOnce(t *testing.T) {
	boom := errors.New("boom")
	pc := newPendingCall("call", fnTarget("f"), 0)
	require.True(t, pc.fail(boom))
	require.False(t, pc.fail(boom), "completed twice")
	require.False(t, pc.wait(context.Background()))
	require.Equal(t, boom, pc.err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pc = newPendingCall("call", fnTarget("f"), 0)
	require.True(t, pc.wait(ctx), "the ended ctx claims it")
	require.False(t, pc.fail(boom), "a failure after the claim")
	require.NoError(t, pc.err)

	for range 2000 {
		ctx, cancel := context.WithCancel(context.Background())
		pc := newPendingCall("call", fnTarget("f"), 0)
		won := make(chan bool, 1)
		go func() { won <- pc.fail(boom) }()
		go cancel()
		claimed := pc.wait(ctx)
		require.NotEqual(t, claimed, <-won, "exactly one of the outcome and the claim wins")
		if !claimed {
			require.Equal(t, boom, pc.err)
		}
		select {
		case <-pc.signal:
			t.Fatal("a signal left in a recycled channel")
		default:
		}
	}
}
