package cluster

import (
	"strconv"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestStaticActivateFromAnyNode: a grain is reached by (kind, identity)
// from every node, lives on its rendezvous owner only, knows its
// identity, and every node's messages reach the same activation.
func TestStaticActivateFromAnyNode(t *testing.T) {
	cs := staticNodes(t, 3, newStore(), 0)
	for i := range 30 {
		id := "user-" + strconv.Itoa(i)
		owner, ok := cs[0].Owner("account", id)
		require.True(t, ok)
		var act string
		for j, c := range cs {
			r, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), c, c.sys, "account", id, echo("add", 1))
			require.NoError(t, err)
			require.Equal(t, owner, r.From, "%s lives on its owner", id)
			require.EqualValues(t, j+1, r.N)
			if act == "" {
				act = r.Text
			}
			require.Equal(t, act, r.Text, "%s: one activation", id)
			o2, _ := c.Owner("account", id)
			require.Equal(t, owner, o2, "every node agrees on the owner")
		}
		who, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), cs[1], cs[1].sys, "account", id, echo("whoami", 0))
		require.NoError(t, err)
		require.Equal(t, id, who.Text, "the grain knows its identity")
	}
	total := 0
	for _, c := range cs {
		total += c.Activations()
	}
	require.Equal(t, 30, total)
	st := cs[0].Stats()
	require.NotZero(t, st.CacheHits+cs[1].Stats().CacheHits+cs[2].Stats().CacheHits)
}

// TestStaticPassivateReactivate: an idle grain is passivated (its
// state saved by its own code), and the next message activates it
// again with the state reloaded; a grain may passivate itself too.
func TestStaticPassivateReactivate(t *testing.T) {
	st := newStore()
	cs := staticNodes(t, 3, st, 300*time.Millisecond)
	c := cs[0]
	r1, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), c, c.sys, "account", "alice", echo("add", 5))
	require.NoError(t, err)
	require.EqualValues(t, 5, r1.N)
	owner := ownerCluster(t, cs, "alice")
	eventually(t, "alice passivated after 300ms idle", 10*time.Second, func() bool { return owner.Activations() == 0 })
	require.EqualValues(t, 1, owner.Stats().Passivations)
	r2, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), c, c.sys, "account", "alice", echo("add", 2))
	require.NoError(t, err)
	require.EqualValues(t, 7, r2.N, "state reloaded by the grain")
	require.NotEqual(t, r1.Text, r2.Text, "a new activation")

	// Passivation on the grain's own request.
	_, err = RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), c, c.sys, "account", "alice", echo("passivate", 0))
	require.NoError(t, err)
	r3, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), c, c.sys, "account", "alice", echo("get", 0))
	require.NoError(t, err)
	require.EqualValues(t, 7, r3.N)
	require.NotEqual(t, r2.Text, r3.Text, "reactivated after it stopped itself")
}

func ownerCluster(t *testing.T, cs []*Cluster, id string) *Cluster {
	t.Helper()
	name, ok := cs[0].Owner("account", id)
	require.True(t, ok)
	for _, c := range cs {
		if c.sys.Name() == name {
			return c
		}
	}
	t.Fatalf("no node %s", name)
	return nil
}

// TestStaticStaleCacheRetried: a cached placement whose activation was
// stopped behind the sender's back is refused (not executed) and
// retried once, transparently: the sender sees an answer.
func TestStaticStaleCacheRetried(t *testing.T) {
	cs := staticNodes(t, 2, newStore(), 0)
	c := cs[0]
	var id string
	for i := 0; ; i++ { // an identity owned by the other node
		id = "bob-" + strconv.Itoa(i)
		if o, _ := c.Owner("account", id); o != c.sys.Name() {
			break
		}
	}
	r0, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), c, c.sys, "account", id, echo("add", 1))
	require.NoError(t, err)
	owner := ownerCluster(t, cs, id)
	pid, ok := owner.sys.Lookup(actorName("account", id))
	require.True(t, ok)
	require.NoError(t, owner.sys.StopActorWait(ctxT(t, 10*time.Second), pid))
	eventually(t, "entry gone", 5*time.Second, func() bool { return owner.Activations() == 0 })
	before := c.Stats().Retries
	r, err := RequestAs[*testpb.Echo](ctxT(t, 10*time.Second), c, c.sys, "account", id, echo("get", 0))
	require.NoError(t, err)
	require.EqualValues(t, 1, r.N, "the state it saved when stopped")
	require.NotEqual(t, r0.Text, r.Text, "a fresh activation")
	require.Equal(t, before+1, c.Stats().Retries)

	// A node that is not the owner refuses the activation, not executed.
	other := cs[0]
	if other == owner {
		other = cs[1]
	}
	_, err = other.hosted.activate(ctxT(t, 5*time.Second), "account", id)
	require.Error(t, err)
	require.Equal(t, CodeNotOwner, actor.ErrorCode(err))
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
}
