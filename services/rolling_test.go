package services

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestRollingRestart: a service on two nodes, each replaced in turn by a
// node with a NEW name (start the new one, then stop the old one
// gracefully), while a client calls a non-idempotent function 1,000
// times in a loop. No call fails and no id is recorded twice; over the
// native path and over proxy pools.
func TestRollingRestart(t *testing.T) {
	t.Run("native", func(t *testing.T) { testRollingRestart(t, false) })
	t.Run("pooled", func(t *testing.T) { testRollingRestart(t, true) })
}

func testRollingRestart(t *testing.T, pools bool) {
	const calls = 1000
	dir := t.TempDir()
	spec := "ledger@1.0.0;b20s,p5ms,x50ms;append"
	extra := map[string]string{"dir": dir, "work": "1ms"}
	if pools {
		extra["pools"] = "1"
	}
	c := newClientPools(t, "client", Config{}, pools)
	a1 := c.provider(t, "ledger-a1", extra, spec)
	b1 := c.provider(t, "ledger-b1", extra, spec)

	// replace starts next, then stops old gracefully.
	replace := func(old *testnode.Child, next string) error {
		c.provider(t, next, extra, spec)
		if err := old.Stop(20 * time.Second); err != nil {
			return fmt.Errorf("stop %s: %w\n%s", old.Name, err, old.Stderr())
		}
		return nil
	}
	startA, startB := make(chan struct{}), make(chan struct{})
	restarted := make(chan error, 2)
	go func() {
		<-startA
		restarted <- replace(a1, "ledger-a2")
		<-startB
		restarted <- replace(b1, "ledger-b2")
	}()

	served := map[string]int{}
	var failures []string
	ctx := ctxT(t, 2*time.Minute)
	for i := range calls {
		switch i {
		case 100:
			close(startA)
		case 400: // a's restart ran while calls went on; b's starts now
			require.NoError(t, <-restarted, "restart of a")
			close(startB)
		case 700: // b's too; the rest is served by a2 and b2
			require.NoError(t, <-restarted, "restart of b")
		}
		id := fmt.Sprintf("call-%04d", i)
		res, err := c.svc.Call(ctx, "ledger", Major(1), "append", &testpb.Echo{Text: id})
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", id, err))
			continue
		}
		require.Equal(t, id, res.(*testpb.Echo).Text)
		served[res.(*testpb.Echo).From]++
	}
	t.Logf("served: %v; retries: %v", served, c.svc.Retries())
	if pools {
		require.NotZero(t, c.pools.Stats("ledger-a2").Messages, "calls went through a pool")
	}
	require.Empty(t, failures, "calls failed")

	// Every id ran exactly once, across all four providers.
	runs := map[string][]string{}
	files, err := filepath.Glob(filepath.Join(dir, "*.ids"))
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		node := strings.TrimSuffix(filepath.Base(f), ".ids")
		for _, id := range strings.Fields(string(b)) {
			runs[id] = append(runs[id], node)
		}
	}
	var dups []string
	for id, nodes := range runs {
		if len(nodes) > 1 {
			dups = append(dups, fmt.Sprintf("%s ran on %v", id, nodes))
		}
	}
	require.Empty(t, dups, "non-idempotent calls ran twice")
	require.Len(t, runs, calls)
	for _, n := range []string{"ledger-a1", "ledger-b1", "ledger-a2", "ledger-b2"} {
		require.NotZero(t, served[n], "%s served calls", n)
	}
}
