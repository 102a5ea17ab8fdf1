package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// stuckDiscovery never finishes registering: its Start waits for ctx.
type stuckDiscovery struct{ stopped chan struct{} }

func (d *stuckDiscovery) Start(ctx context.Context, _ discovery.Member, _ func(discovery.Event)) error {
	<-ctx.Done()
	return ctx.Err()
}
func (d *stuckDiscovery) Update(context.Context, discovery.Member) error { return nil }
func (d *stuckDiscovery) Stop(context.Context) error                     { close(d.stopped); return nil }

// Start waits for discovery only as long as its ctx allows, and a failed
// Start leaves nothing running: no transport, no listener, no goroutine,
// and System.Stop has nothing of it to stop.
func TestStartIsBoundedByItsContext(t *testing.T) {
	sys, err := actor.Start(actor.Config{Name: "s", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	disc := &stuckDiscovery{stopped: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	n, err := remote.Start(ctx, sys, remote.Config{Cookie: remote.NewCookie(), Discovery: disc})
	require.Nil(t, n)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "remote: start discovery")

	_, err = sys.Request(ctxT(t, 5*time.Second), actor.PID{Node: "elsewhere", Incarnation: 1, ID: 1}, "x")
	require.ErrorIs(t, err, actor.ErrUnreachable, "no transport is left attached")
	require.NoError(t, sys.Stop(ctxT(t, 10*time.Second)))
	select {
	case <-disc.stopped:
		t.Fatal("the failed node's stop hook ran")
	default:
	}
}
