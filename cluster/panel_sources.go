package cluster

import (
	"sort"
	"strings"
)

// What the observer panel lists of the layers built on grains: the
// singletons and the topics this node knows.

// singletonRow is a singleton and the incarnation that owns it in this
// node's view.
type singletonRow struct {
	name        string
	node        string
	incarnation uint64
}

// singletonOwners lists the singletons some live node hosts in this
// node's view, with their owners, sorted by name.
func (c *Cluster) singletonOwners() []singletonRow {
	c.view.mu.RLock()
	var kinds []string
	for k := range c.view.kinds {
		if strings.HasPrefix(k, singletonPrefix) {
			kinds = append(kinds, k)
		}
	}
	c.view.mu.RUnlock()
	sort.Strings(kinds)
	var out []singletonRow
	for _, k := range kinds {
		if o, ok := c.view.owner(k, singletonID); ok {
			out = append(out, singletonRow{name: strings.TrimPrefix(k, singletonPrefix), node: o.node, incarnation: o.incarnation})
		}
	}
	return out
}

// topicRow is a topic, the nodes with subscribers to it, and whether this
// node has some.
type topicRow struct {
	topic string
	nodes []string
	local bool
}

// topicList lists the topics this node knows (its own and those live
// peers announced), sorted by name.
func (c *Cluster) topicList() []topicRow {
	t := c.topics
	if t == nil {
		return nil
	}
	names := map[string]struct{}{}
	t.mu.RLock()
	for tp := range t.local {
		names[tp] = struct{}{}
	}
	for _, p := range t.peers {
		for tp := range p.topics {
			names[tp] = struct{}{}
		}
	}
	t.mu.RUnlock()
	var out []topicRow
	for tp := range names {
		nodes := c.TopicNodes(tp)
		if len(nodes) == 0 {
			continue // only peers the view no longer holds as live
		}
		out = append(out, topicRow{topic: tp, nodes: nodes, local: t.hasLocal(tp)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].topic < out[j].topic })
	return out
}
