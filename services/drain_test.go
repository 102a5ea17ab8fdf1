package services

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// gateClock is the real clock, except that Sleep reports itself and
// waits for the test to let it go.
type gateClock struct {
	realClock
	sleeping chan struct{}
	release  chan struct{}
}

func (g *gateClock) Sleep(ctx context.Context, _ time.Duration) error {
	g.sleeping <- struct{}{}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestGracefulDrain: a provider stopping with calls in flight finishes
// them (zero failures); callers see it draining and stop choosing it; a
// call that reaches it anyway is refused with ErrDraining (not executed)
// and retried on the other provider.
func TestGracefulDrain(t *testing.T) {
	dir := t.TempDir()
	const spec = "drain@1.0.0;b20s,p5ms;hold,echo"
	extra := map[string]string{"dir": dir, "ackwait": "30s"}
	c := newClient(t, "client", Config{})
	p1 := c.provider(t, "drain-1", extra, spec)

	// Work started before the drain: five calls held on drain-1.
	const held = 5
	results := make(chan error, held)
	for range held {
		go func() {
			res, err := c.svc.Call(ctxT(t, time.Minute), "drain", Major(1), "hold", &testpb.Echo{Text: "release"})
			if err == nil && res.(*testpb.Echo).From != "drain-1" {
				err = errWrongNode
			}
			results <- err
		}()
	}
	eventually(t, "the held calls pending on drain-1", func() bool {
		p := c.svc.Pending()
		return len(p) == 1 && p[0].Node == "drain-1" && p[0].Count == held
	})
	p2 := c.provider(t, "drain-2", extra, spec)

	// A second caller that ignores the drain, to show the refusal path;
	// it knows only drain-1 until its first retry.
	gate := &gateClock{sleeping: make(chan struct{}), release: make(chan struct{})}
	blind := newClient(t, "blind", Config{Clock: gate})
	blind.svc.reg.ignoreDraining = true
	require.NoError(t, blind.node.Connect(ctxT(t, 10*time.Second), "drain-1", p1.Addr))
	blind.waitProvider(t, "drain", "drain-1", p1.Incarnation)

	stopped := make(chan error, 1)
	go func() { stopped <- p1.Stop(30 * time.Second) }()
	eventually(t, "the client sees drain-1 draining", func() bool {
		for _, p := range c.svc.Providers("drain") {
			if p.Node == "drain-1" {
				return p.Draining
			}
		}
		return false
	})

	// Calls arriving during the drain go to drain-2 without a retry.
	for range 20 {
		res, err := c.svc.Call(ctxT(t, 10*time.Second), "drain", Major(1), "echo", &testpb.Echo{Text: "x"})
		require.NoError(t, err)
		require.Equal(t, "drain-2", res.(*testpb.Echo).From)
	}
	require.Zero(t, c.svc.RetriesFor("drain", ""), "the drain was visible: nothing was sent to drain-1")

	// The blind caller sends to drain-1, is refused, and retries on drain-2.
	blindRes := make(chan *testpb.Echo, 1)
	blindErr := make(chan error, 1)
	go func() {
		res, err := blind.svc.Call(ctxT(t, time.Minute), "drain", Major(1), "echo", &testpb.Echo{Text: "y"})
		if err != nil {
			blindErr <- err
			return
		}
		blindRes <- res.(*testpb.Echo)
	}()
	select {
	case <-gate.sleeping:
	case err := <-blindErr:
		t.Fatalf("the blind call failed: %v", err)
	}
	require.Equal(t, uint64(1), blind.svc.RetriesFor("drain", "draining"), "refused with ErrDraining")
	require.NoError(t, blind.node.Connect(ctxT(t, 10*time.Second), "drain-2", p2.Addr))
	eventually(t, "blind sees drain-2", func() bool { return len(blind.svc.Providers("drain")) == 2 })
	close(gate.release)
	select {
	case res := <-blindRes:
		require.Equal(t, "drain-2", res.From)
	case err := <-blindErr:
		t.Fatalf("the blind call failed: %v", err)
	}

	// drain-1 is still draining, waiting for its held calls: release them.
	select {
	case err := <-stopped:
		t.Fatalf("drain-1 stopped before its calls finished: %v", err)
	default:
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "release"), nil, 0o644))
	for range held {
		require.NoError(t, <-results, "a call started before the drain failed")
	}
	require.NoError(t, <-stopped)
	eventually(t, "drain-1 gone from the client's registry", func() bool { return len(c.svc.Providers("drain")) == 1 })
	sent, _ := c.svc.DrainAcks()
	require.Equal(t, uint64(1), sent, "the client acknowledged drain-1's drain")
	require.Equal(t, actor.NotExecuted, actor.Outcome(actor.ErrDraining))
}

var errWrongNode = os.ErrInvalid
