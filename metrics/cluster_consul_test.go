package metrics

import (
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/cluster"
	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
)

// TestScrapeClusterConsul: two nodes on a real Consul agent, whose
// activations run under owner leases: after 12 activations the scrape
// counts 12 leases acquired over the two nodes, none lost or busy, and
// the 4 grains that stopped themselves as passivations. Needs a real
// agent: make test, or scripts/consul.sh run -- go test ./metrics.
func TestScrapeClusterConsul(t *testing.T) {
	addr := consultest.Addr(t)
	svc := fmt.Sprintf("mrmetrics-%08x", rand.Uint32())
	reg := prometheus.NewRegistry()
	var cs []*cluster.Cluster
	var sys *actor.System
	for _, name := range []string{"ca", "cb"} {
		s, n := testnode.Local(t, testnode.Options{Name: name, Consul: addr, ConsulService: svc, TTL: 2 * time.Second})
		if sys == nil {
			sys = s
		}
		c, err := cluster.Start(ctxT(t), n, cluster.Config{Kinds: []cluster.Kind{counterKind()}})
		require.NoError(t, err)
		require.NoError(t, Register(reg, n, WithCluster(c)))
		cs = append(cs, c)
	}
	testutil.Eventually(t, "both nodes see two hosts", func() bool {
		return len(cs[0].Hosts("account")) == 2 && len(cs[1].Hosts("account")) == 2
	})
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	for i := range 12 {
		text := "add"
		if i < 4 {
			text = "stop"
		}
		_, err := cluster.RequestAs[*testpb.Echo](ctxT(t), cs[0], sys, "account", fmt.Sprintf("u-%d", i), &testpb.Echo{Text: text})
		require.NoError(t, err)
	}
	testutil.Eventually(t, "4 grains passivated", func() bool { return cs[0].Activations()+cs[1].Activations() == 8 })
	mfs := scrape(t, srv.URL)
	total := func(name string, labels ...string) float64 {
		v := 0.0
		for _, n := range []string{"ca", "cb"} {
			v += mustValue(t, mfs, name, append([]string{DefaultNodeLabel, n}, labels...)...)
		}
		return v
	}
	require.Equal(t, 12.0, total("mailroom_cluster_lease_events_total", "event", "acquired"))
	require.Equal(t, 0.0, total("mailroom_cluster_lease_events_total", "event", "lost"))
	require.Equal(t, 0.0, total("mailroom_cluster_lease_events_total", "event", "busy"))
	require.Equal(t, 12.0, total("mailroom_cluster_activations_total"))
	require.Equal(t, 4.0, total("mailroom_cluster_passivations_total"))
	require.Equal(t, 8.0, total("mailroom_cluster_activations", "kind", "account"))
}
