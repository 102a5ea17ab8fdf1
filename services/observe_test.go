package services

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// metric returns the value of the sample of family name whose labels
// include want.
func metric(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) (float64, bool) {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestObservability: pending calls per provider incarnation with the
// oldest age, calls in flight per function on the callee, retries and
// their reasons, through the Go accessors and the Prometheus collector.
func TestObservability(t *testing.T) {
	dir := t.TempDir()
	c := newClient(t, "client", Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.svc.Collector())

	// The client provides obs; a child calls it three times.
	release := make(chan struct{})
	require.NoError(t, c.svc.Provide(ctxT(t, 10*time.Second), Service{
		Name: "obs", Version: MustVersion("1.0.0"),
		Functions: []Function{{Name: "hold", Handler: func(ctx context.Context, _ proto.Message) (proto.Message, error) {
			select {
			case <-release:
				return &testpb.Echo{Text: "released", From: "client"}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}},
	}))
	caller := testnode.Start(t, testnode.Options{Name: "caller-1"})
	require.NoError(t, c.node.Connect(ctxT(t, 10*time.Second), "caller-1", caller.Addr))
	viaChild := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := c.sys.Call(ctxT(t, time.Minute), "caller-1", "svc_call", &testpb.Echo{Text: "obs 1 hold x"})
			viaChild <- err
		}()
	}
	inflight := map[string]string{"service": "obs", "version": "1.0.0", "function": "hold"}
	eventually(t, "three calls in flight in obs.hold", func() bool {
		v, ok := metric(t, reg, "mailroom_services_inflight_calls", inflight)
		return ok && v == 3
	})
	require.Equal(t, []InFlight{{"obs", "1.0.0", "hold", 3}}, c.svc.InFlight())

	// A child provides slow; the client has two calls pending on it.
	slow := c.provider(t, "slow-1", map[string]string{"dir": dir}, "slow@1.0.0;;hold")
	pendingDone := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.svc.Call(ctxT(t, time.Minute), "slow", Major(1), "hold", &testpb.Echo{Text: "slow-release"})
			pendingDone <- err
		}()
	}
	inc := actor.FormatIncarnation(slow.Incarnation)
	at := map[string]string{"node": "slow-1", "incarnation": inc}
	eventually(t, "two calls pending on slow-1 for a while", func() bool {
		n, ok := metric(t, reg, "mailroom_services_pending_calls", at)
		age, _ := metric(t, reg, "mailroom_services_pending_oldest_seconds", at)
		return ok && n == 2 && age >= 0.05
	})
	p := c.svc.Pending()
	require.Len(t, p, 1)
	require.Equal(t, "slow-1", p[0].Node)
	require.Equal(t, slow.Incarnation, p[0].Incarnation)
	require.Equal(t, 2, p[0].Count)
	require.GreaterOrEqual(t, p[0].Oldest, 50*time.Millisecond)
	// The callee's own accessor, over the wire.
	res, err := c.sys.Call(ctxT(t, 10*time.Second), "slow-1", "svc_inflight", &testpb.Echo{})
	require.NoError(t, err)
	require.Equal(t, "slow@1.0.0:hold=2", res.(*testpb.Echo).Text)

	// Retries and their reasons.
	_, err = c.svc.Call(ctxT(t, 10*time.Second), "nosvc", Major(1), "f", &testpb.Echo{}, WithBudget(100*time.Millisecond), WithBackoff(10*time.Millisecond))
	require.Error(t, err)
	n, ok := metric(t, reg, "mailroom_services_retries_total", map[string]string{"service": "nosvc", "function": "f", "reason": "no_service"})
	require.True(t, ok)
	require.GreaterOrEqual(t, n, 2.0)
	n, _ = metric(t, reg, "mailroom_services_calls_total", map[string]string{"service": "nosvc", "result": "not_executed"})
	require.Equal(t, 1.0, n)
	_, ok = metric(t, reg, "mailroom_services_providers", map[string]string{"service": "slow", "node": "slow-1", "draining": "false"})
	require.True(t, ok)

	// Everything ends: the gauges go back to zero.
	close(release)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slow-release"), nil, 0o644))
	for range 3 {
		require.NoError(t, <-viaChild)
	}
	for range 2 {
		require.NoError(t, <-pendingDone)
	}
	v, _ := metric(t, reg, "mailroom_services_inflight_calls", inflight)
	require.Zero(t, v)
	require.Empty(t, c.svc.Pending())
	n, _ = metric(t, reg, "mailroom_services_calls_total", map[string]string{"service": "slow", "function": "hold", "result": "ok"})
	require.Equal(t, 2.0, n)
}
