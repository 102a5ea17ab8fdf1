package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// consulNodes starts n in-process nodes on the Consul agent at addr,
// under a service name of their own, hosting account.
func consulNodes(t *testing.T, n int, st *store, idle time.Duration) []*Cluster {
	t.Helper()
	addr := consultest.Addr(t)
	svc := fmt.Sprintf("mrgrain-%08x", rand.Uint32())
	var out []*Cluster
	for i := range n {
		_, node := testnode.Local(t, testnode.Options{Name: fmt.Sprintf("c%d", i+1), Consul: addr, ConsulService: svc, TTL: 2 * time.Second})
		c, err := Start(ctxT(t, 10*time.Second), node, Config{Kinds: []Kind{accountKind(st, idle)}})
		require.NoError(t, err)
		require.NotNil(t, c.leaser, "Consul grants leases")
		out = append(out, c)
	}
	waitHosts(t, out, "account", n)
	return out
}

func holder(t *testing.T, c *Cluster, id string) string {
	t.Helper()
	h, err := c.leaser.Holder(ctxT(t, 5*time.Second), "grain/account/"+id)
	require.NoError(t, err)
	return h
}

func memberID(c *Cluster) string {
	return discovery.Member{Node: c.sys.Name(), Incarnation: c.sys.Incarnation()}.ID()
}

// TestConsulActivatePassivateReactivate: with Consul the activation runs
// under its owner lease (the KV key names the owner's incarnation), the
// lease goes back when the grain passivates, and the next message
// activates it again with its state reloaded. Needs a real agent: make
// test, or scripts/consul.sh run -- go test ./cluster.
func TestConsulActivatePassivateReactivate(t *testing.T) {
	cs := consulNodes(t, 3, newStore(), 400*time.Millisecond)
	c := cs[0]
	r1, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), c, c.sys, "account", "alice", echo("add", 5))
	require.NoError(t, err)
	owner := ownerCluster(t, cs, "alice")
	require.Equal(t, owner.sys.Name(), r1.From)
	require.Equal(t, memberID(owner), holder(t, c, "alice"), "activated under its lease")
	require.EqualValues(t, 1, owner.Stats().LeasesAcquired)

	eventually(t, "alice passivated", 10*time.Second, func() bool { return owner.Activations() == 0 })
	require.Equal(t, "", holder(t, c, "alice"), "the lease went back with the passivation")

	r2, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), c, cs[2].sys, "account", "alice", echo("add", 1))
	require.NoError(t, err)
	require.EqualValues(t, 6, r2.N, "state reloaded")
	require.NotEqual(t, r1.Text, r2.Text)
	require.Equal(t, memberID(owner), holder(t, c, "alice"))
}

// TestConsulLeaseRefusesSecondActivation: a node whose view disagrees
// (it believes the owner is gone, so it owns the grain itself) cannot
// activate the grain while the owner holds its lease: it refuses, not
// executed, and the activation stays single. Once the owner lets go
// (it passivates the grain), the other node may take it.
func TestConsulLeaseRefusesSecondActivation(t *testing.T) {
	cs := consulNodes(t, 2, newStore(), 0)
	var id string
	for i := 0; ; i++ {
		id = "carol-" + strconv.Itoa(i)
		if o, _ := cs[0].Owner("account", id); o == cs[0].sys.Name() {
			break
		}
	}
	r, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), cs[1], cs[1].sys, "account", id, echo("add", 1))
	require.NoError(t, err)
	require.Equal(t, cs[0].sys.Name(), r.From)

	// cs[1]'s view loses cs[0]: it is the owner now, in its view.
	require.True(t, cs[1].view.remove(cs[0].sys.Name(), cs[0].sys.Incarnation()))
	o, _ := cs[1].Owner("account", id)
	require.Equal(t, cs[1].sys.Name(), o)
	_, err = cs[1].hosted.activate(ctxT(t, 5*time.Second), "account", id)
	require.Error(t, err)
	require.Equal(t, CodeLeaseHeld, actor.ErrorCode(err), "%v", err)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	require.Zero(t, cs[1].Activations())
	require.NotZero(t, cs[1].Stats().LeasesBusy)

	// The sender keeps trying (not executed) until the lease is free.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = cs[1].Request(ctx, cs[1].sys, "account", id, echo("get", 0))
	require.Error(t, err)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err), "%v", err)

	// The owner passivates it: the lease goes, and cs[1] takes over.
	_, err = cs[0].Request(ctxT(t, 10*time.Second), cs[0].sys, "account", id, echo("passivate", 0))
	require.NoError(t, err)
	r2, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), cs[1], cs[1].sys, "account", id, echo("get", 0))
	require.NoError(t, err)
	require.Equal(t, cs[1].sys.Name(), r2.From)
	require.EqualValues(t, 1, r2.N)
	require.Equal(t, memberID(cs[1]), holder(t, cs[1], id))
}

// TestConsulEvenSpread: 10,000 identities activated over 3 Consul nodes,
// each under its lease, land within ±15 % of an even share per node.
func TestConsulEvenSpread(t *testing.T) {
	cs := consulNodes(t, 3, newStore(), 0)
	spread(t, cs, 10000, true)
}

// TestStaticEvenSpread: 10,000 identities activated over 3 Static nodes
// land within ±15 % of an even share on every node.
func TestStaticEvenSpread(t *testing.T) {
	cs := staticNodes(t, 3, newStore(), 0)
	spread(t, cs, 10000, true)
}

// spread activates (or only places) n identities from the first node
// and checks each node's share.
func spread(t *testing.T, cs []*Cluster, n int, activate bool) {
	t.Helper()
	var mu sync.Mutex // protects counts
	counts := map[string]int{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16) // 16 callers at once: activations on the owners overlap
	errs := make(chan error, n)
	for i := range n {
		id := "user-" + strconv.Itoa(i)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs <- func() error {
				from := ""
				if activate {
					r, err := RequestAs[*testpb.Echo](ctxT(t, 30*time.Second), cs[0], cs[0].sys, "account", id, echo("get", 0))
					if err != nil {
						return err
					}
					from = r.From
				} else {
					from, _ = cs[0].Owner("account", id)
				}
				mu.Lock()
				counts[from]++
				mu.Unlock()
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	even := float64(n) / float64(len(cs))
	for _, c := range cs {
		got := counts[c.sys.Name()]
		if activate {
			require.Equal(t, got, c.Activations(), "%s: activations and answers agree", c.sys.Name())
		}
		t.Logf("%s: %d of %d identities (%.1f %% of even), activated=%v", c.sys.Name(), got, n, 100*float64(got)/even, activate)
		require.InDelta(t, even, float64(got), 0.15*even, c.sys.Name())
	}
}

// TestConsulStartLearnsKindsAnnouncedBeforeIt: a node whose discovery saw
// another node's kinds before its cluster layer started (no link between
// them, so nothing announces them again) places on that node at once.
func TestConsulStartLearnsKindsAnnouncedBeforeIt(t *testing.T) {
	addr := consultest.Addr(t)
	svc := fmt.Sprintf("mrgrain-%08x", rand.Uint32())
	opts := func(name string) testnode.Options {
		return testnode.Options{Name: name, Consul: addr, ConsulService: svc, TTL: 2 * time.Second}
	}
	_, na := testnode.Local(t, opts("early-a"))
	_, err := Start(ctxT(t, 10*time.Second), na, Config{Kinds: []Kind{accountKind(newStore(), 0)}})
	require.NoError(t, err)
	_, nb := testnode.Local(t, opts("early-b"))
	eventually(t, "b's discovery lists a with its kinds", 20*time.Second, func() bool {
		for _, m := range nb.Members() {
			if m.Node == "early-a" && m.Meta[MetaKinds] != "" {
				return true
			}
		}
		return false
	})
	cb, err := Start(ctxT(t, 10*time.Second), nb, Config{Kinds: []Kind{accountKind(newStore(), 0)}})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"early-a", "early-b"}, cb.Hosts("account"), "b knows a hosts account from its first moment")
}
