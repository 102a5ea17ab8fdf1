package cluster

import (
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/stretchr/testify/require"
)

// TestStaticKilledPeerWithPoolLinks: with Static, a peer SIGKILLed while
// this node has a proxy pool to it leaves placement. Its native link's
// end is the only link event the cluster hears (pool links closing fire
// no hook), so counting the pool links still closing as "a link left"
// kept a dead node the owner of its grains for good (found by
// examples/grains).
func TestStaticKilledPeerWithPoolLinks(t *testing.T) {
	for round := range 3 {
		_, pnode := testnode.Local(t, testnode.Options{Name: "pl-parent"})
		pools, err := proxypool.Start(pnode, proxypool.Config{Eager: true})
		require.NoError(t, err)
		pc, err := Start(ctxT(t, 10*time.Second), pnode, Config{Kinds: []Kind{accountKind(newStore(), 0)}})
		require.NoError(t, err)
		child := testnode.Start(t, testnode.Options{Name: "pl-child", Seeds: []string{"pl-parent=" + pnode.Addr()}})
		eventually(t, "two hosts", 20*time.Second, func() bool { return len(pc.Hosts("account")) == 2 })
		eventually(t, "a pool to the child", 20*time.Second, func() bool {
			return pools.ConnectionInfo("pl-child").Status == proxypool.Connected
		})
		child.Kill()
		eventually(t, "the killed child out of placement", 5*time.Second, func() bool { return len(pc.Hosts("account")) == 1 })
		t.Logf("round %d: out of placement", round)
	}
}
