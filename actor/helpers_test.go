package actor

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testutil"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newSystem starts a system stopped at the end of the test.
func newSystem(t testing.TB, name string) *System {
	t.Helper()
	s, err := Start(Config{Name: name, Logger: DiscardLogger()})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, s.Stop(ctx))
	})
	return s
}

func newLoggedSystem(t testing.TB, name string) (*System, *logBuffer) {
	t.Helper()
	lb := &logBuffer{}
	s, err := Start(Config{Name: name, Logger: slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, s.Stop(ctx))
	})
	return s, lb
}

// recorder is an actor that forwards everything it receives to a channel.
type recorder struct{ out chan any }

func (r *recorder) Receive(c *Context) { r.out <- c.Message() }

func recv(t testing.TB, ch <-chan any) any {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
		return nil
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type logBuffer = testutil.LogBuffer

// eventually polls cond until it holds (internal/testing/testutil).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, cond)
}
