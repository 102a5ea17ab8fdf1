package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/stretchr/testify/require"
)

// The panel's singleton and topic rows come from the cluster's own state:
// a singleton hosted by every node is listed once with the owner the
// view picks, and a topic with subscribers on two of three nodes is
// listed with those two, from a node that has none of its own.
func TestPanelSingletonsAndTopics(t *testing.T) {
	idle := actor.PropsFromFunc(func(*actor.Context) {})
	var cs []*Cluster
	var seeds []string
	for i := range 3 {
		name := fmt.Sprintf("p%d", i+1)
		_, node := testnode.Local(t, testnode.Options{Name: name, Seeds: append([]string(nil), seeds...)})
		c, err := Start(ctxT(t, 10*time.Second), node, Config{Singletons: []Singleton{{Name: "leader", Props: func() *actor.Props { return idle }}}})
		require.NoError(t, err)
		seeds = append(seeds, name+"="+node.Addr())
		cs = append(cs, c)
	}
	waitHosts(t, cs, singletonKind("leader"), 3)
	owner, ok := cs[0].SingletonOwner("leader")
	require.True(t, ok)
	var ownerInc uint64
	for _, c := range cs {
		if c.sys.Name() == owner {
			ownerInc = c.sys.Incarnation()
		}
	}
	require.Equal(t, []singletonRow{{name: "leader", node: owner, incarnation: ownerInc}}, cs[0].singletonOwners())

	for _, c := range cs[1:] {
		pid, err := c.sys.Spawn(idle)
		require.NoError(t, err)
		require.NoError(t, c.Subscribe(ctxT(t, 10*time.Second), "news", pid))
	}
	waitTopicNodes(t, cs[0], "news", "p2", "p3")
	require.Equal(t, []topicRow{{topic: "news", nodes: []string{"p2", "p3"}, local: false}}, cs[0].topicList())
	rows := cs[1].topicList()
	require.Len(t, rows, 1)
	require.True(t, rows[0].local, "p2 has a subscriber of its own")
}
