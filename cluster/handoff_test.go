package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestStaticHandoffWaitsForTheOldActivation: with Static, a node that
// becomes the owner of an identity (here g3, in a view where g1 has not
// seen it join yet) does not activate it while the previous owner (g1)
// still runs it: its messages are refused as not executed
// (CodeHandoffPending) until g1, seeing g3, stops its activation; then
// g3 activates it with the state g1 saved. Without the handoff, g3
// would answer at once from a second activation (the mutation this
// catches).
func TestStaticHandoffWaitsForTheOldActivation(t *testing.T) {
	st := newStore()
	cs := staticNodes(t, 3, st, 0)
	g1, g3 := cs[0], cs[2]
	var id string
	for i := 0; ; i++ {
		id = fmt.Sprintf("handoff-%d", i)
		o, _ := g3.view.owner("account", id)
		p, _ := g3.view.previous("account", id)
		if o.node == g3.sys.Name() && p.node == g1.sys.Name() {
			break
		}
	}
	// g1 has not seen g3 yet: it owns id in its view, and runs it.
	require.True(t, g1.view.suspend(g3.sys.Name(), g3.sys.Incarnation()))
	r, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), g1, g1.sys, "account", id, echo("add", 1))
	require.NoError(t, err)
	require.Equal(t, g1.sys.Name(), r.From)

	// g3 owns it in its view: it asks g1, which refuses: not executed.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = g3.Request(ctx, g3.sys, "account", id, echo("get", 0))
	require.Error(t, err)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err), "%v", err)
	require.Contains(t, err.Error(), "has not handed it off yet")
	require.Zero(t, g3.Activations(), "no second activation while g1 runs it")
	require.Equal(t, 1, g1.Activations())

	// g1 sees g3 join: it stops its activation (saving 1); g3 takes over.
	require.True(t, g1.view.upsert(g3.sys.Name(), g3.sys.Incarnation(), []string{"account"}, true))
	g1.changed(true)
	r2, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), g3, g3.sys, "account", id, echo("get", 0))
	require.NoError(t, err)
	require.Equal(t, g3.sys.Name(), r2.From)
	require.EqualValues(t, 1, r2.N, "the state g1 saved when it stopped")
	require.NotEqual(t, r.Text, r2.Text)
	eventually(t, "g1's activation gone", 10*time.Second, func() bool { return g1.Activations() == 0 })
	require.NotZero(t, g3.Stats().Handoffs)
}

// TestStaticHandoffAsksOnlyTheRunnerUp: with Static, a first activation
// costs the new owner one handoff call, to one node (its view's runner-up),
// whatever the number of nodes.
func TestStaticHandoffAsksOnlyTheRunnerUp(t *testing.T) {
	cs := staticNodes(t, 3, newStore(), 0)
	const n = 30
	for i := range n {
		_, err := cs[0].Request(ctxT(t, 10*time.Second), cs[0].sys, "account", fmt.Sprintf("once-%d", i), echo("get", 0))
		require.NoError(t, err)
	}
	var handoffs uint64
	for _, c := range cs {
		handoffs += c.Stats().Handoffs
	}
	require.EqualValues(t, n, handoffs, "one handoff per activation")
}

// TestConsulJoinReleasesLeasePromptly: with Consul the lease orders a
// move on join, and the old owner gives the lease back as soon as its
// view has the new owner, so the new owner's first activation does not
// wait for the TTL (2 s here): it answers within 1 s of the view change.
// Needs a real agent: make test, or scripts/consul.sh run -- go test ./cluster.
func TestConsulJoinReleasesLeasePromptly(t *testing.T) {
	cs := consulNodes(t, 2, newStore(), 0)
	c1, c2 := cs[0], cs[1]
	var id string
	for i := 0; ; i++ {
		id = fmt.Sprintf("join-%d", i)
		if o, _ := c2.view.owner("account", id); o.node == c2.sys.Name() {
			break
		}
	}
	// c1 has not seen c2 join: it owns id in its view, and runs it.
	require.True(t, c1.view.suspend(c2.sys.Name(), c2.sys.Incarnation()))
	r, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), c1, c1.sys, "account", id, echo("add", 1))
	require.NoError(t, err)
	require.Equal(t, c1.sys.Name(), r.From)
	_, err = c2.hosted.activate(ctxT(t, 5*time.Second), "account", id)
	require.Equal(t, CodeLeaseHeld, actor.ErrorCode(err), "%v", err)

	// c1 sees c2: it stops the activation and releases the lease at once.
	require.True(t, c1.view.upsert(c2.sys.Name(), c2.sys.Incarnation(), []string{"account"}, true))
	moved := time.Now()
	c1.changed(true)
	r2, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), c2, c2.sys, "account", id, echo("get", 0))
	took := time.Since(moved)
	require.NoError(t, err)
	require.Equal(t, c2.sys.Name(), r2.From)
	require.EqualValues(t, 1, r2.N, "the state c1 saved when it stopped")
	t.Logf("the new owner answered %v after the old owner's view changed (TTL 2 s)", took)
	require.Less(t, took, time.Second)
	require.Zero(t, c2.Stats().Handoffs, "with leases, no handoff call")
}
