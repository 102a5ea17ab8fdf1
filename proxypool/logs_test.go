package proxypool

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// TestThePoolsSupervisorIsLabelledAndQuiet: the proxy pool's supervisor
// starting a connection master is the runtime's routine: not at Info in
// the application's log, and labelled layer=proxypool at Debug.
func TestThePoolsSupervisorIsLabelledAndQuiet(t *testing.T) {
	b := startNode(t, "b", nodeOpts{poolSize: 1})
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		logs := &testutil.LogBuffer{}
		sys, err := actor.Start(actor.Config{Name: "a-" + level.String(), Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))})
		require.NoError(t, err)
		n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: testnode.DefaultCookie, PoolSize: 1, Seeds: []string{"b=" + b.n.Addr()}})
		require.NoError(t, err)
		m, err := Start(n, Config{ManualConnect: true})
		require.NoError(t, err)
		require.NoError(t, m.StartConnection(ctxT(t), "b"))
		waitStatus(t, m, "b", Connected)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		require.NoError(t, sys.Stop(ctx))
		cancel()
		var started []string
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "started child") {
				started = append(started, line)
			}
		}
		if level == slog.LevelInfo {
			require.Empty(t, started, "no routine supervisor line at Info:\n%s", logs.String())
			continue
		}
		require.NotEmpty(t, started, "at Debug the line is there:\n%s", logs.String())
		for _, line := range started {
			require.Contains(t, line, "level=DEBUG")
			require.Contains(t, line, "layer=proxypool")
			require.Contains(t, line, "tree="+SupervisorName)
		}
	}
}
