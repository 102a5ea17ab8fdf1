package actor

import (
	"context"
	"errors"
	"testing"

	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestRegisterAsTypesTheHandler: the handler gets its argument typed; a
// wrong argument type is refused before it runs, not executed, naming
// both types; a nil argument arrives as the typed nil.
func TestRegisterAsTypesTheHandler(t *testing.T) {
	s := newSystem(t, "n")
	ran := 0
	require.NoError(t, RegisterAs(s, "echo", func(_ context.Context, e *testpb.Echo) (*testpb.Echo, error) {
		ran++
		return &testpb.Echo{Text: "echo " + e.GetText()}, nil
	}))
	r, err := CallAs[*testpb.Echo](ctxT(t), s, "n", "echo", &testpb.Echo{Text: "hi"})
	require.NoError(t, err)
	require.Equal(t, "echo hi", r.Text)

	_, err = s.Call(ctxT(t), "n", "echo", &testpb.Blob{})
	require.Error(t, err)
	require.ErrorIs(t, err, ErrBadMessage)
	require.Equal(t, NotExecuted, Outcome(err), "%v", err)
	require.ErrorContains(t, err, "takes *testpb.Echo, got *testpb.Blob")
	var pe *PanicError
	require.False(t, errors.As(err, &pe), "not a panic")
	require.Equal(t, 1, ran, "the handler never ran for the wrong type")

	r, err = CallAs[*testpb.Echo](ctxT(t), s, "n", "echo", nil)
	require.NoError(t, err)
	require.Equal(t, "echo ", r.Text)
	require.Error(t, RegisterAs[*testpb.Echo, *testpb.Echo](s, "nil", nil), "a nil handler is refused")
}
