package idempotency

import (
	"context"
	"errors"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

// TestOutcomesAreRecorded: a not-executed error releases the key (a retry
// runs), a panic is recorded (a repeat does not run it again), a
// may-have-executed error is given again as may have executed.
func TestOutcomesAreRecorded(t *testing.T) {
	g := NewGuard(NewMemory(MemoryConfig{}), 1)
	_, err := g.Run(ctxT(t), "ne", func(context.Context) ([]byte, error) { return nil, actor.NotExecutedError(errors.New("busy")) })
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	r, err := g.Run(ctxT(t), "ne", func(context.Context) ([]byte, error) { return []byte("ran"), nil })
	require.NoError(t, err)
	require.Equal(t, "ran", string(r))

	require.Panics(t, func() {
		_, _ = g.Run(ctxT(t), "p", func(context.Context) ([]byte, error) { panic("poison") })
	})
	_, err = g.Run(ctxT(t), "p", func(context.Context) ([]byte, error) { t.Fatal("ran again"); return nil, nil })
	require.ErrorContains(t, err, "panicked: poison")
	require.Equal(t, actor.Executed, actor.Outcome(err), "a rejection (executed), also once a handler returns it")

	_, err = g.Run(ctxT(t), "m", func(context.Context) ([]byte, error) { return nil, actor.MayHaveExecutedError(errors.New("half")) })
	require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err))
	_, err = g.Run(ctxT(t), "m", func(context.Context) ([]byte, error) { t.Fatal("ran again"); return nil, nil })
	require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err))
}

// TestRerunInterrupted: with the option, a durable claim left by a dead
// incarnation is run again by Run, and fenced (never ran) by Status.
func TestRerunInterrupted(t *testing.T) {
	dir := t.TempDir()
	d1, err := OpenDir(dir, DirConfig{})
	require.NoError(t, err)
	for _, k := range []string{"a", "b"} {
		_, claimed, err := d1.Claim(k, 1) // then the kill
		require.NoError(t, err)
		require.True(t, claimed)
	}
	d2, err := OpenDir(dir, DirConfig{})
	require.NoError(t, err)
	require.Equal(t, 2, d2.Len())
	g := NewGuard(d2, 2, RerunInterrupted())
	r, err := g.Run(ctxT(t), "a", func(context.Context) ([]byte, error) { return []byte("again"), nil })
	require.NoError(t, err)
	require.Equal(t, "again", string(r))
	st, err := g.Status("b", 1)
	require.NoError(t, err)
	require.Equal(t, NeverRan, st.State)
	_, err = g.Run(ctxT(t), "b", func(context.Context) ([]byte, error) { t.Fatal("ran"); return nil, nil })
	require.ErrorIs(t, err, ErrFenced)
}
