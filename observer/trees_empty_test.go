package observer

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// TestNoSupervisors: a node with no supervisor at all (no proxy pool
// either) answers trees as an empty list, not null, which the page's
// script maps over ("no supervisors").
func TestNoSupervisors(t *testing.T) {
	sys, err := actor.Start(actor.Config{Name: "bare", Logger: slog.New(slog.NewTextHandler(testutil.TestWriter{T: t}, &slog.HandlerOptions{Level: slog.LevelError}))})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, sys.Stop(ctx))
	})
	n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: testnode.DefaultCookie, Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	srv := httptest.NewServer(Handler(n, Options{}))
	t.Cleanup(srv.Close)
	_, body := get(t, srv.URL+"/api/trees")
	require.True(t, strings.Contains(string(body), `"trees":[]`), "%s", body)
}
