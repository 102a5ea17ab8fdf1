package services

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// flakyDiscovery registers at once and refuses the first failUpdates
// updates.
type flakyDiscovery struct{ failUpdates atomic.Int64 }

func (d *flakyDiscovery) Start(context.Context, discovery.Member, func(discovery.Event)) error {
	return nil
}

func (d *flakyDiscovery) Update(context.Context, discovery.Member) error {
	if d.failUpdates.Add(-1) >= 0 {
		return errors.New("agent unavailable")
	}
	return nil
}

func (d *flakyDiscovery) Stop(context.Context) error { return nil }

// A Start whose announcement fails returns nil and leaves nothing behind:
// its announcement over the links is withdrawn, its ack actor is gone,
// and Start works once discovery does.
func TestAFailedStartLeavesNothingBehind(t *testing.T) {
	peer, peerNode := testnode.Local(t, testnode.Options{Name: "svc-peer"})
	_ = peer
	sys, err := actor.Start(actor.Config{Name: "svc-a", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sys.Stop(ctxT(t, 15*time.Second))) })
	disc := &flakyDiscovery{}
	n, err := remote.Start(ctxT(t, 10*time.Second), sys, remote.Config{Cookie: testnode.DefaultCookie, Discovery: disc})
	require.NoError(t, err)
	require.NoError(t, n.Connect(ctxT(t, 10*time.Second), "svc-peer", peerNode.Addr()))

	disc.failUpdates.Store(1)
	svc, err := Start(ctxT(t, 10*time.Second), n, Config{})
	require.Nil(t, svc)
	require.ErrorContains(t, err, "services: start")
	require.ErrorContains(t, err, "agent unavailable")
	_, ok := sys.Lookup(ackActor)
	require.False(t, ok, "the ack actor is stopped")
	eventually(t, "the peer sees the announcement withdrawn", func() bool {
		p, ok := peerNode.Peer("svc-a")
		return ok && p.Meta != nil && p.Meta[metaMarker] == ""
	})

	svc, err = Start(ctxT(t, 10*time.Second), n, Config{})
	require.NoError(t, err)
	require.NotNil(t, svc)
	eventually(t, "the peer sees the services marker", func() bool {
		p, ok := peerNode.Peer("svc-a")
		return ok && p.Meta[metaMarker] != ""
	})
	_, err = Start(ctxT(t, 10*time.Second), n, Config{})
	require.ErrorContains(t, err, "already started")
}

// A withdrawn announcement clears the marker a receiver holds, whatever
// the sequence of the announcement it replaces.
func TestWithdrawnMetaClearsTheMarker(t *testing.T) {
	r := newRegistry()
	_, errs := r.update("x", 1, false, map[string]string{metaMarker: "1:7"})
	require.Empty(t, errs)
	require.True(t, r.entries["x"].marker)
	_, errs = r.update("x", 1, false, withdrawnMeta())
	require.Empty(t, errs)
	require.False(t, r.entries["x"].marker)
}
