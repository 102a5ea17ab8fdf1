package observer

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// tnode is an in-process node over TCP with a proxy pool.
type tnode struct {
	sys  *actor.System
	n    *remote.Node
	pool *proxypool.Manager
	stop func() // stops it now (also done at cleanup)
}

func startNode(t testing.TB, name string) *tnode {
	t.Helper()
	sys, err := actor.Start(actor.Config{Name: name, Logger: slog.New(slog.NewTextHandler(testutil.TestWriter{T: t}, &slog.HandlerOptions{Level: slog.LevelError}))})
	require.NoError(t, err)
	require.NoError(t, testnode.Install(sys))
	n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: testnode.DefaultCookie, Listen: "127.0.0.1:0", PoolSize: 2})
	require.NoError(t, err)
	m, err := proxypool.Start(n, proxypool.Config{Eager: true}) // the panels show pools from the start
	require.NoError(t, err)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, sys.Stop(ctx))
	}
	t.Cleanup(stop)
	return &tnode{sys: sys, n: n, pool: m, stop: stop}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds (internal/testing/testutil).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, cond)
}

// get fetches url with the optional headers and returns status and body.
func get(t testing.TB, url string, hdr ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// getJSON fetches url into v, requiring 200.
func getJSON(t testing.TB, url string, v any) {
	t.Helper()
	code, body := get(t, url)
	require.Equal(t, http.StatusOK, code, string(body))
	require.NoError(t, json.Unmarshal(body, v), string(body))
}
