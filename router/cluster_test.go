package router_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/mailroomtest"
	"github.com/mailroom-go/mailroom/router"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Routees on three nodes behind a consistent-hash router on the first:
// each key goes to one routee, every time; removing one routee moves
// only the keys it had (at most 1/N + 10 % of them all), and a routee
// whose node is killed is removed from the set.
func TestConsistentHashOverThreeNodes(t *testing.T) {
	c := mailroomtest.StartCluster(t, mailroomtest.ClusterConfig{
		Nodes: 3,
		Types: []proto.Message{&wrapperspb.StringValue{}},
	})
	who := actor.PropsFromFunc(func(ac *actor.Context) {
		if _, ok := ac.Message().(*wrapperspb.StringValue); ok {
			ac.Respond(wrapperspb.String(ac.Self().String()))
		}
	})
	var rts []router.Routee
	for _, n := range c.Nodes() {
		for i := range 2 {
			pid, err := n.System().SpawnNamed(who, fmt.Sprintf("who-%d", i))
			require.NoError(t, err)
			rts = append(rts, router.Of(pid))
		}
	}
	sys := c.Nodes()[0].System()
	key := func(m any) string { return m.(*wrapperspb.StringValue).Value }
	g, err := router.NewGroup(sys, router.Config{Kind: router.ConsistentHash, Key: key}, rts...)
	require.NoError(t, err)
	defer g.Close(ctxT(t, 5*time.Second))

	const keys = 10_000
	route := func() map[string]string {
		got := make(map[string]string, keys)
		for i := range keys {
			k := fmt.Sprintf("key-%d", i)
			v, err := router.RequestAs[*wrapperspb.StringValue](ctxT(t, 10*time.Second), g.Router, sys, wrapperspb.String(k))
			require.NoError(t, err)
			got[k] = v.Value
		}
		return got
	}
	first := route()
	per := map[string]int{}
	for _, r := range first {
		per[r]++
	}
	require.Len(t, per, len(rts), "every routee gets keys")
	again := route()
	require.Equal(t, first, again, "each key to the same routee every time")

	gone := rts[3]
	require.Equal(t, 1, g.Remove(gone))
	after := route()
	moved := 0
	for k, r := range first {
		if after[k] != r {
			moved++
			require.Equal(t, gone.PID.String(), r, "key %s moved though its routee stayed", k)
		}
	}
	frac := float64(moved) / keys
	bound := 1/float64(len(rts)) + 0.10
	t.Logf("removing 1 of %d routees moved %d of %d keys (%.1f %%, bound %.1f %%)", len(rts), moved, keys, 100*frac, 100*bound)
	require.LessOrEqual(t, frac, bound)

	// The third node dies: its routee leaves the set (its incarnation is gone).
	victim := c.Nodes()[2]
	require.NoError(t, c.Kill(victim.Name()))
	eventually(t, 10*time.Second, "the killed node's routees removed", func() bool {
		for _, r := range g.Routees() {
			if r.PID.Node == victim.Name() {
				return false
			}
		}
		return true
	})
	v, err := router.RequestAs[*wrapperspb.StringValue](ctxT(t, 10*time.Second), g.Router, sys, wrapperspb.String("after the kill"))
	require.NoError(t, err)
	require.NotContains(t, v.Value, victim.Name())
}
