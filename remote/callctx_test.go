package remote

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCallCtxCancel(t *testing.T) {
	var c callCtx
	_, ok := c.Deadline()
	require.False(t, ok)
	require.NoError(t, c.Err())
	done := c.Done()
	select {
	case <-done:
		t.Fatal("done before cancel")
	default:
	}
	c.cancel(context.Canceled)
	<-done
	require.ErrorIs(t, c.Err(), context.Canceled)
	c.cancel(context.DeadlineExceeded) // the first cancel wins
	require.ErrorIs(t, c.Err(), context.Canceled)
}

func TestCallCtxDoneAfterCancelIsClosed(t *testing.T) {
	var c callCtx
	c.cancel(context.Canceled)
	<-c.Done()
}

// Err reports a deadline that has passed even if nobody asked for Done,
// and Done, once asked for, closes at the deadline.
func TestCallCtxDeadline(t *testing.T) {
	var c callCtx
	c.deadline = time.Now().Add(-time.Millisecond)
	require.ErrorIs(t, c.Err(), context.DeadlineExceeded)
	<-c.Done()

	var d callCtx
	d.deadline = time.Now().Add(20 * time.Millisecond)
	dl, ok := d.Deadline()
	require.True(t, ok)
	require.Equal(t, d.deadline, dl)
	require.NoError(t, d.Err())
	<-d.Done() // closed by the timer
	require.ErrorIs(t, d.Err(), context.DeadlineExceeded)
}

// Contexts derived from a call's context end with it, through AfterFunc:
// no goroutine waits on its Done meanwhile.
func TestCallCtxDerivedContexts(t *testing.T) {
	var c callCtx
	g0 := runtime.NumGoroutine()
	kids := make([]context.Context, 100)
	for i := range kids {
		var cancel context.CancelFunc
		kids[i], cancel = context.WithCancel(&c)
		defer cancel()
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), g0+1, "derived contexts wait on goroutines")
	stopped := make(chan struct{})
	stop := c.AfterFunc(func() { close(stopped) })
	require.True(t, stop(), "unregistered before the cancel")
	require.False(t, stop())
	c.cancel(context.Canceled)
	for _, k := range kids {
		<-k.Done()
		require.ErrorIs(t, k.Err(), context.Canceled)
	}
	select {
	case <-stopped:
		t.Fatal("an unregistered AfterFunc ran")
	default:
	}
	ran := make(chan struct{})
	require.False(t, c.AfterFunc(func() { close(ran) })(), "registered after the cancel: runs at once")
	<-ran
}
