package metrics

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/cluster"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// counterKind is a grain answering every Echo with its node's name; "stop"
// makes it stop itself after answering (a passivation on its own request).
func counterKind() cluster.Kind {
	return cluster.Kind{Name: "account", Props: func(string) *actor.Props {
		return actor.PropsFromFunc(func(c *actor.Context) {
			if m, ok := c.Message().(*testpb.Echo); ok {
				c.Respond(&testpb.Echo{From: c.System().Name()})
				if m.Text == "stop" {
					c.Stop(c.Self())
				}
			}
		})
	}}
}

// TestScrapeCluster: three nodes over Static, one registry with
// WithCluster for each; after a known workload from a (activate 30,
// request them again, passivate 10, request those 10 again, one
// activation asked of a node that is not the owner, a fourth node
// joining) the scrape shows the cluster families with exactly the
// values the workload makes.
func TestScrapeCluster(t *testing.T) {
	reg := prometheus.NewRegistry()
	var seeds []string
	var cs []*cluster.Cluster
	var nodes []*tnode
	add := func(name string) {
		n := startNode(t, name, seeds...)
		c, err := cluster.Start(ctxT(t), n.n, cluster.Config{Kinds: []cluster.Kind{counterKind()}})
		require.NoError(t, err)
		require.NoError(t, Register(reg, n.n, WithCluster(c), WithSampleAge(0)))
		seeds = append(seeds, name+"="+n.n.Addr())
		cs, nodes = append(cs, c), append(nodes, n)
	}
	waitHosts := func(n int) {
		testutil.Eventually(t, fmt.Sprintf("every node sees %d hosts", n), func() bool {
			for _, c := range cs {
				if len(c.Hosts("account")) != n {
					return false
				}
			}
			return true
		})
	}
	for _, name := range []string{"a", "b", "c"} {
		add(name)
	}
	waitHosts(3)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)

	a := cs[0]
	ids := make([]string, 30)
	req := func(id, text string) {
		r, err := cluster.RequestAs[*testpb.Echo](ctxT(t), a, nodes[0].sys, "account", id, &testpb.Echo{Text: text})
		require.NoError(t, err, id)
		owner, _ := a.Owner("account", id)
		require.Equal(t, owner, r.From)
	}
	for i := range ids {
		ids[i] = fmt.Sprintf("user-%d", i)
		req(ids[i], "add") // 30 misses, 30 activations
	}
	for _, id := range ids {
		req(id, "get") // 30 hits
	}
	for _, id := range ids[:10] {
		req(id, "stop") // 10 hits, 10 passivations
	}
	running := func() int {
		n := 0
		for _, c := range cs {
			n += c.Activations()
		}
		return n
	}
	testutil.Eventually(t, "10 grains passivated", func() bool { return running() == 20 })
	for _, id := range ids[:10] {
		req(id, "get") // 10 stale hits, each retried: 10 retries, 10 misses, 10 activations
	}
	// An activation asked of a node that does not own the identity: not
	// executed, counted as a refusal there.
	owner, _ := a.Owner("account", ids[0])
	other := "a"
	if owner == "a" {
		other = "b"
	}
	_, err := nodes[0].sys.Call(ctxT(t), other, "mailroom.cluster.activate", wrapperspb.String("account/"+ids[0]))
	require.Equal(t, cluster.CodeNotOwner, actor.ErrorCode(err), "%v", err)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))

	mfs := scrape(t, srv.URL)
	total := func(name string, labels ...string) float64 {
		v := 0.0
		for _, n := range []string{"a", "b", "c"} {
			v += mustValue(t, mfs, name, append([]string{DefaultNodeLabel, n}, labels...)...)
		}
		return v
	}
	on := func(node, name string, labels ...string) float64 {
		return mustValue(t, mfs, name, append([]string{DefaultNodeLabel, node}, labels...)...)
	}
	require.Equal(t, 40.0, total("mailroom_cluster_activations_total"))
	require.Equal(t, 30.0, total("mailroom_cluster_activations", "kind", "account"))
	require.Equal(t, 10.0, total("mailroom_cluster_passivations_total"))
	require.Equal(t, 0.0, total("mailroom_cluster_handovers_total"))
	require.Equal(t, 50.0, on("a", "mailroom_cluster_placement_lookups_total", "result", "hit"))
	require.Equal(t, 40.0, on("a", "mailroom_cluster_placement_lookups_total", "result", "miss"))
	require.Equal(t, 10.0, on("a", "mailroom_cluster_retries_total"))
	require.Equal(t, 1.0, on(other, "mailroom_cluster_not_owner_refusals_total"))
	require.Equal(t, 1.0, total("mailroom_cluster_not_owner_refusals_total"))
	for _, n := range []string{"a", "b", "c"} {
		require.Equal(t, 3.0, on(n, "mailroom_cluster_kind_hosts", "kind", "account"))
		for _, ev := range []string{"acquired", "lost", "busy"} {
			require.Equal(t, 0.0, on(n, "mailroom_cluster_lease_events_total", "event", ev), "Static: no leases")
		}
	}
	require.Equal(t, float64(a.Stats().Activations), on("a", "mailroom_cluster_activations_total"), "the scrape reads Stats")

	// A fourth node joins: the running grains whose owner is d now are
	// handed over, each counted once.
	before := map[string]string{}
	for _, id := range ids {
		before[id], _ = a.Owner("account", id)
	}
	add("d")
	waitHosts(4)
	moved := 0
	for _, id := range ids {
		if o, _ := a.Owner("account", id); o != before[id] {
			require.Equal(t, "d", o, "only identities moving to the new node move")
			moved++
		}
	}
	require.Positive(t, moved, "some of 30 identities hash to a fourth node")
	testutil.Eventually(t, "the moved grains stopped on their old owners", func() bool { return running() == 30-moved })
	mfs = scrape(t, srv.URL)
	require.Equal(t, float64(moved), total("mailroom_cluster_handovers_total"))
	require.Equal(t, 10.0, total("mailroom_cluster_passivations_total"), "a handover is not a passivation")
	require.Equal(t, 4.0, on("a", "mailroom_cluster_kind_hosts", "kind", "account"))
	require.Equal(t, 0.0, on("d", "mailroom_cluster_activations", "kind", "account"))

	// A moved identity's next message activates it on d, after its
	// previous owner handed it off.
	for _, id := range ids {
		if o, _ := a.Owner("account", id); o == "d" {
			req(id, "get")
			break
		}
	}
	mfs = scrape(t, srv.URL)
	require.Equal(t, 1.0, on("d", "mailroom_cluster_handoffs_total"))
}
