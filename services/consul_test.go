package services

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// consulNode is an in-process node whose discovery is the Consul agent
// at addr, under the Consul service name cs.
func consulNode(t *testing.T, addr, cs, name string) (*actor.System, *remote.Node, *Services) {
	t.Helper()
	sys, err := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	require.NoError(t, sys.RegisterTypes(&testpb.Echo{}))
	t.Cleanup(func() { // Stop is idempotent: a test may stop it first
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, sys.Stop(ctx))
	})
	disc, err := discovery.NewConsul(discovery.ConsulConfig{
		Address: addr, Service: cs, TTL: 2 * time.Second, RefreshEvery: 500 * time.Millisecond,
		Logger: actor.DiscardLogger(),
	})
	require.NoError(t, err)
	n, err := remote.Start(ctxT(t, 10*time.Second), sys, remote.Config{Cookie: "services-test-cookie-0123", Discovery: disc})
	require.NoError(t, err)
	svc, err := Start(ctxT(t, 10*time.Second), n, Config{})
	require.NoError(t, err)
	return sys, n, svc
}

// TestConsulAnnounce: services announced through Consul service meta are
// discovered by a node that has no link to the provider, with the
// provider's defaults, called, and gone when the provider stops. Needs a real agent:
// make test, or scripts/consul.sh run -- go test ./services.
func TestConsulAnnounce(t *testing.T) {
	addr := consultest.Addr(t)
	cs := fmt.Sprintf("mrsvc-%08x", rand.Uint32())
	psys, _, prov := consulNode(t, addr, cs, "geo-p")
	echo := func(_ context.Context, arg proto.Message) (proto.Message, error) {
		return &testpb.Echo{Text: arg.(*testpb.Echo).Text, From: "geo-p"}, nil
	}
	require.NoError(t, prov.Provide(ctxT(t, 10*time.Second), Service{
		Name: "geo", Version: MustVersion("3.1.0"),
		Defaults:  Defaults{Retry: RetryPolicy{Budget: 5 * time.Second}},
		Functions: []Function{{Name: "echo", Handler: echo}, {Name: "lookup", Handler: echo, Idempotent: true}},
	}))
	_, cnode, cli := consulNode(t, addr, cs, "geo-c")

	eventually(t, "geo-c learns geo from Consul", func() bool {
		ps := cli.Providers("geo")
		return len(ps) == 1 && ps[0].Node == "geo-p" && ps[0].Version == MustVersion("3.1.0")
	})
	_, linked := cnode.Peer("geo-p")
	require.False(t, linked, "learned through Consul, not over a link")
	require.Equal(t, []string{"echo", "lookup"}, cli.Providers("geo")[0].Functions)

	// What Consul holds: the discovery layer's "m_" prefix, our keys.
	entries, _, err := consultest.Client(t, addr).Health().Service(cs, "", true, (&api.QueryOptions{}).WithContext(ctxT(t, 10*time.Second)))
	require.NoError(t, err)
	var meta map[string]string
	for _, e := range entries {
		if e.Service.Meta["node"] == "geo-p" {
			meta = e.Service.Meta
		}
	}
	require.Equal(t, "geo@3.1.0;b5s;echo,lookup:i", meta["m_s0"])
	require.True(t, strings.HasPrefix(meta["m_sv"], "1:"), meta["m_sv"])

	pol, _, err := cli.Effective("geo", Major(3), "lookup", WithBackoff(time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, pol.Retry.Budget, "the provider's default travelled through Consul")
	require.True(t, pol.Idempotent)
	res, err := cli.Call(ctxT(t, 10*time.Second), "geo", Major(3), "echo", &testpb.Echo{Text: "hi"})
	require.NoError(t, err)
	require.Equal(t, "geo-p", res.(*testpb.Echo).From)

	// The provider stops: callers stop seeing it.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	require.NoError(t, psys.Stop(ctx))
	eventually(t, "geo gone", func() bool { return len(cli.Providers("geo")) == 0 })
	_, err = cli.Call(ctxT(t, 10*time.Second), "geo", Major(3), "echo", &testpb.Echo{}, NoRetry())
	require.ErrorIs(t, err, actor.ErrNoService)
}

// TestConsulStartLearnsServicesListedBeforeIt: a node whose discovery
// listed a provider before its services layer started (no link between
// them, so nothing announces the provider again) finds it at once. With
// Kubernetes this is every start: the provider lists its members as it
// starts, before services.Start.
func TestConsulStartLearnsServicesListedBeforeIt(t *testing.T) {
	addr := consultest.Addr(t)
	cs := fmt.Sprintf("mrsvc-%08x", rand.Uint32())
	_, _, prov := consulNode(t, addr, cs, "early-p")
	echo := func(_ context.Context, arg proto.Message) (proto.Message, error) { return arg, nil }
	require.NoError(t, prov.Provide(ctxT(t, 10*time.Second), Service{Name: "geo", Version: MustVersion("1.0.0"),
		Functions: []Function{{Name: "echo", Handler: echo}}}))

	sys, err := actor.Start(actor.Config{Name: "early-c", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, sys.Stop(ctx))
	})
	disc, err := discovery.NewConsul(discovery.ConsulConfig{
		Address: addr, Service: cs, TTL: 2 * time.Second, RefreshEvery: 500 * time.Millisecond, Logger: actor.DiscardLogger(),
	})
	require.NoError(t, err)
	n, err := remote.Start(ctxT(t, 10*time.Second), sys, remote.Config{Cookie: "services-test-cookie-0123", Discovery: disc})
	require.NoError(t, err)
	eventually(t, "early-c's discovery lists early-p with its services", func() bool {
		for _, m := range n.Members() {
			if m.Node == "early-p" && m.Meta["sv"] != "" {
				return true
			}
		}
		return false
	})
	_, linked := n.Peer("early-p")
	require.False(t, linked)
	cli, err := Start(ctxT(t, 10*time.Second), n, Config{})
	require.NoError(t, err)
	ps := cli.Providers("geo")
	require.Len(t, ps, 1, "early-c knows early-p provides geo from its first moment")
	require.Equal(t, "early-p", ps[0].Node)
}
