package cluster

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestConsulFrozenOwnerLosesLease: the owner of a grain is frozen
// (SIGSTOP) past its TTL. Consul expires its check, frees its leases, and
// another node activates the grain. When the frozen owner wakes up it
// counts its leases lost on its own clock and stops its activation, or
// learns first that it was declared dead and stops the whole node; either
// way it says so in its log. (The message it was holding meets the
// activation's per-message lease check, which refuses it: that refusal
// goes to a peer that is gone, so this test cannot observe it.) Needs a real
// agent: make test, or scripts/consul.sh run -- go test ./cluster.
func TestConsulFrozenOwnerLosesLease(t *testing.T) {
	addr := consultest.Addr(t)
	base := testnode.Options{Consul: addr, ConsulService: fmt.Sprintf("mrgrain-%08x", rand.Uint32()), TTL: 2 * time.Second}
	p := base
	p.Name = "f-parent"
	psys, pnode := testnode.Local(t, p)
	pc, err := Start(ctxT(t, 10*time.Second), pnode, Config{Kinds: []Kind{accountKind(newStore(), 0)}})
	require.NoError(t, err)
	o := base
	o.Name = "f-child"
	child := testnode.Start(t, o)
	eventually(t, "two hosts", 20*time.Second, func() bool { return len(pc.Hosts("account")) == 2 })
	var id string
	for i := 0; ; i++ {
		id = fmt.Sprintf("frozen-%d", i)
		if ow, _ := pc.Owner("account", id); ow == child.Name {
			break
		}
	}
	r1, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), pc, psys, "account", id, echo("add", 1))
	require.NoError(t, err)
	require.Equal(t, child.Name, r1.From)

	require.NoError(t, child.Signal(syscall.SIGSTOP))
	// The signal is delivered asynchronously: the child counts as frozen
	// once the kernel says it is stopped (CI once had its get answered by
	// the child right after the signal was sent).
	eventually(t, "the owner stopped", 10*time.Second, child.Stopped)
	frozen := time.Now()
	// A send queued to the frozen owner: it must never be handled there
	// once the owner wakes up without its lease.
	psys.Send(mustPID(t, pc, id), echo("add", 100))

	// The first get is taken by the frozen owner's link and fails when
	// its node is declared down (may have executed); the next one
	// reaches the new activation.
	var r2 *testpb.Echo
	for r2 == nil {
		r2, err = RequestAs[*testpb.Echo](ctxT(t, 30*time.Second), pc, psys, "account", id, echo("get", 0))
		if err != nil {
			require.ErrorIs(t, err, actor.ErrNodeDown)
			require.Less(t, time.Since(frozen), 20*time.Second)
		}
	}
	require.Equal(t, psys.Name(), r2.From, "a new activation on the live node")
	require.NotEqual(t, r1.Text, r2.Text)
	t.Logf("a new activation answered %v after the owner froze (TTL %v)", time.Since(frozen), base.TTL)

	require.NoError(t, child.Signal(syscall.SIGCONT))
	defer func() {
		if t.Failed() {
			t.Logf("child stderr:\n%s", child.Stderr())
		}
	}()
	eventually(t, "the woken owner logs that it lost the lease, or that it stops as declared dead", 20*time.Second, func() bool {
		// Either the cluster layer saw its lease lost first, or the node
		// learned it was declared dead first and stops itself, with its
		// activations (a message reaching the activation meanwhile is
		// refused: the lease is no longer Valid on the owner's own clock).
		e := child.Stderr()
		return strings.Contains(e, "owner lease lost") && strings.Contains(e, id) ||
			strings.Contains(e, "declared dead by the cluster; stopping it")
	})
	t.Logf("woken owner's log:\n%s", grep(child.Stderr(), "lease"))
}

func mustPID(t *testing.T, c *Cluster, id string) actor.PID {
	t.Helper()
	pid, ok := c.cache.get(grainKey("account", id))
	require.True(t, ok)
	return pid
}

func grep(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
