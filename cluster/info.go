package cluster

import (
	"context"
	"sort"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// KindInfo is what this node knows of one kind.
type KindInfo struct {
	Name        string
	Hosted      bool     // this node hosts it
	Hosts       []string // the live nodes hosting it in this node's view, sorted
	Activations int      // activations of it running on this node
}

// Kinds lists the kinds this node knows, its own and those the live
// nodes of its view announce, sorted by name. It reads the view and the
// activations under their locks and calls nothing.
func (c *Cluster) Kinds() []KindInfo {
	hosts := c.view.kindHosts()
	running := c.hosted.perKind()
	names := make([]string, 0, len(hosts))
	for k := range hosts {
		names = append(names, k)
	}
	for k := range c.kinds {
		if _, ok := hosts[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	out := make([]KindInfo, 0, len(names))
	for _, k := range names {
		out = append(out, KindInfo{Name: k, Hosted: c.kinds[k] != nil, Hosts: hosts[k], Activations: running[k]})
	}
	return out
}

// kindHosts maps each kind of the view to the nodes hosting it, sorted
// (rebuildLocked keeps each candidate list sorted by node).
func (v *view) kindHosts() map[string][]string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := make(map[string][]string, len(v.kinds))
	for k, cs := range v.kinds {
		nodes := make([]string, len(cs))
		for i, c := range cs {
			nodes[i] = c.node
		}
		out[k] = nodes
	}
	return out
}

// perKind counts the activations running here per kind.
func (h *host) perKind() map[string]int {
	out := map[string]int{}
	for _, a := range h.running() {
		out[a.kind]++
	}
	return out
}

// The function every node registers to say how many activations it runs
// (the observer panel asks each live node). It takes any message and
// answers a UInt64Value; it reads one counter under the host's lock, so a
// peer calling it costs what a call costs.
const infoFn = "mailroom.cluster.info"

func (c *Cluster) registerInfo() error {
	if err := c.sys.RegisterTypes(&wrapperspb.UInt64Value{}); err != nil {
		return err
	}
	return c.sys.Register(infoFn, func(context.Context, proto.Message) (proto.Message, error) {
		return wrapperspb.UInt64(uint64(c.hosted.count())), nil
	})
}
