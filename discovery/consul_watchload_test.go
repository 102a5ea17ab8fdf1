package discovery

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/stretchr/testify/require"
)

// TestConsulOneWatchPerNode: a node keeps one blocking watch on the agent
// whatever the cluster size. Three nodes, each behind a counting proxy,
// see 40 more members come up and go away; none ever holds two watch
// queries open, every watch is on the one service, and every other
// request is the node's own TTL refresh, the check read before it, or
// its registration: nothing is asked per member. (internal/testing/scaletest
// measures the same at 32 processes, with the rate per node.)
func TestConsulOneWatchPerNode(t *testing.T) {
	addr := consultest.Addr(t)
	svc := testService()
	var nodes []*node
	var proxies []*consultest.Proxy
	for i := range 3 {
		px := consultest.StartProxy(t, addr)
		proxies = append(proxies, px)
		nodes = append(nodes, newNode(t, px.Addr(), svc, fmt.Sprintf("n%d", i)))
	}
	client := consultest.Client(t, addr)
	extras := make([]Member, 40)
	for i := range extras {
		extras[i] = testMember(fmt.Sprintf("extra%d", i))
		reg := registration(nodes[0].p.Config(), extras[i], api.HealthPassing)
		reg.Checks = nil // passing, with nothing to refresh
		require.NoError(t, client.Agent().ServiceRegister(reg))
	}
	t.Cleanup(func() {
		for _, m := range extras {
			_ = client.Agent().ServiceDeregister(instanceID(svc, m))
		}
	})
	for _, n := range nodes {
		for _, m := range extras {
			n.rec.wait(t, 10*time.Second, MemberUp, m)
		}
	}
	for _, m := range extras {
		require.NoError(t, client.Agent().ServiceDeregister(instanceID(svc, m)))
	}
	for _, n := range nodes {
		for _, m := range extras {
			n.rec.wait(t, 10*time.Second, MemberDown, m)
		}
	}
	for i, px := range proxies {
		c := px.Counts()
		t.Logf("%s asked the agent: %v", nodes[i].name, c)
		require.Equal(t, int64(1), c.WatchOpenMax, "%s: watches open at once", nodes[i].name)
		require.Equal(t, []string{"/v1/health/service/" + svc}, c.WatchPaths, "%s watches one service", nodes[i].name)
		require.Zero(t, c.Of(consultest.KindOther), "%s: requests of no known kind: %v", nodes[i].name, c.OtherPaths)
		require.Zero(t, c.Of(consultest.KindDeregister), "%s deregistered something while running", nodes[i].name)
		// 80 changes, coalesced by MinQueryInterval: fewer watch queries
		// than changes, never one per member per change.
		require.LessOrEqual(t, c.Of(consultest.KindWatch), int64(2*len(extras)+2), "%s: watch queries", nodes[i].name)
	}
}
