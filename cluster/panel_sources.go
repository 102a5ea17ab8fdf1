package cluster

// What the observer panel lists of the layers built on grains. Each
// function is the one place the panel reads its rows from: singletons and
// topics fill theirs in; until a node runs any, they list none.

// singletonRow is a singleton and the incarnation that owns it in this
// node's view.
type singletonRow struct {
	name        string
	node        string
	incarnation uint64
}

// singletonOwners lists the singletons this node knows, sorted by name.
func (c *Cluster) singletonOwners() []singletonRow { return nil }

// topicRow is a topic, the nodes with subscribers to it, and how many
// subscribers it has on this node.
type topicRow struct {
	topic string
	nodes []string
	local int
}

// topicList lists the topics this node knows, sorted by name.
func (c *Cluster) topicList() []topicRow { return nil }
