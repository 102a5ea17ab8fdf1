package cluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/observer"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// PanelName is the name of the observer panel Panel builds (its JSON is
// at /api/panels/cluster).
const PanelName = "cluster"

// maxPanelNodes bounds the nodes the panel asks for their activations;
// the rest are counted in the table's Left.
const maxPanelNodes = 64

// Panel is the observer panel of c's cluster layer, for
// observer.Options.Panels:
//
//	observer.Handler(node, observer.Options{Panels: []observer.Panel{cluster.Panel(c)}})
//
// It shows, from this node's view: the kinds and the nodes hosting each
// (with this node's activations of each); the activations per live node,
// asked of each node (mailroom.cluster.info, in parallel, within the
// observer's TreeTimeout: a node that does not answer in time says why
// in its row); the owner leases (the provider, held now, acquired, lost,
// busy); the placement cache (entries, hits, misses, hit rate, not-owner
// refusals, retries); this node's activations started, running,
// passivated and handed over; the singletons with their owners and the topics
// with their subscribing nodes. Data reads the view and the counters and
// changes nothing.
func Panel(c *Cluster) observer.Panel {
	return observer.Panel{Name: PanelName, Data: c.panelData}
}

func (c *Cluster) panelData(ctx context.Context) (observer.PanelData, error) {
	return observer.PanelData{Tables: []observer.Table{
		c.kindsTable(),
		c.nodesTable(ctx),
		c.leasesTable(),
		c.cacheTable(),
		c.lifecycleTable(),
		c.singletonsTable(),
		c.topicsTable(),
	}}, nil
}

func (c *Cluster) kindsTable() observer.Table {
	t := observer.Table{Title: "kinds", Columns: []string{"kind", "hosted here", "hosts", "nodes", "activations here"}, Rows: [][]string{}}
	for _, k := range c.Kinds() {
		here := "no"
		if k.Hosted {
			here = "yes"
		}
		t.Rows = append(t.Rows, []string{k.Name, here, strconv.Itoa(len(k.Hosts)), strings.Join(k.Hosts, ", "), strconv.Itoa(k.Activations)})
	}
	return t
}

// nodesTable asks every live node of the view for its activation count,
// in parallel; each goroutine ends with its call, within ctx.
func (c *Cluster) nodesTable(ctx context.Context) observer.Table {
	ms := c.view.members()
	t := observer.Table{Title: "activations per node", Columns: []string{"node", "incarnation", "kinds", "activations"}, Rows: [][]string{}}
	if len(ms) > maxPanelNodes {
		t.Left = len(ms) - maxPanelNodes
		ms = ms[:maxPanelNodes]
	}
	counts := make([]string, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			n, err := c.activationsOn(ctx, m.node)
			if err != nil {
				counts[i] = "? (" + err.Error() + ")"
				return
			}
			counts[i] = strconv.FormatUint(n, 10)
		})
	}
	wg.Wait()
	for i, m := range ms {
		kinds := append([]string(nil), m.kinds...)
		sort.Strings(kinds)
		node := m.node
		if node == c.sys.Name() {
			node += " (this node)"
		}
		t.Rows = append(t.Rows, []string{node, actor.FormatIncarnation(m.incarnation), strings.Join(kinds, ", "), counts[i]})
	}
	return t
}

func (c *Cluster) leasesTable() observer.Table {
	st := c.Stats()
	provider := "none: placement and handover (docs/CLUSTER.md)"
	if c.leaser != nil {
		provider = fmt.Sprintf("%T", c.leaser)
	}
	return observer.Table{Title: "owner leases", Columns: []string{"provider", "held now", "acquired", "lost", "busy"},
		Rows: [][]string{{provider, strconv.Itoa(c.hosted.leasesHeld()), u(st.LeasesAcquired), u(st.LeasesLost), u(st.LeasesBusy)}}}
}

func (c *Cluster) cacheTable() observer.Table {
	st := c.Stats()
	rate := "-"
	if n := st.CacheHits + st.CacheMisses; n > 0 {
		rate = fmt.Sprintf("%.1f %%", 100*float64(st.CacheHits)/float64(n))
	}
	return observer.Table{Title: "placement cache", Columns: []string{"entries", "bound", "hits", "misses", "hit rate", "not-owner refusals", "retries"},
		Rows: [][]string{{strconv.Itoa(c.cache.size()), strconv.Itoa(c.cache.max), u(st.CacheHits), u(st.CacheMisses), rate, u(st.Refusals), u(st.Retries)}}}
}

func (c *Cluster) lifecycleTable() observer.Table {
	st := c.Stats()
	return observer.Table{Title: "activations here since start", Columns: []string{"started", "running", "passivated", "handed over"},
		Rows: [][]string{{u(st.Activations), strconv.Itoa(c.hosted.count()), u(st.Passivations), u(st.Handovers)}}}
}

func (c *Cluster) singletonsTable() observer.Table {
	t := observer.Table{Title: "singleton owners", Columns: []string{"singleton", "owner", "incarnation"}, Rows: [][]string{}}
	for _, s := range c.singletonOwners() {
		t.Rows = append(t.Rows, []string{s.name, s.node, actor.FormatIncarnation(s.incarnation)})
	}
	return t
}

func (c *Cluster) topicsTable() observer.Table {
	t := observer.Table{Title: "topics", Columns: []string{"topic", "subscribing nodes", "subscribers here"}, Rows: [][]string{}}
	for _, tp := range c.topicList() {
		t.Rows = append(t.Rows, []string{tp.topic, strings.Join(tp.nodes, ", "), yesNo(tp.local)})
	}
	return t
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func u(n uint64) string { return strconv.FormatUint(n, 10) }

// activationsOn asks node how many activations it runs.
func (c *Cluster) activationsOn(ctx context.Context, node string) (uint64, error) {
	if node == c.sys.Name() {
		return uint64(c.hosted.count()), nil
	}
	r, err := actor.CallAs[*wrapperspb.UInt64Value](ctx, c.sys, node, infoFn, wrapperspb.String(""))
	if err != nil {
		return 0, err
	}
	return r.GetValue(), nil
}

// memberInfo is one live incarnation of the view.
type memberInfo struct {
	node        string
	incarnation uint64
	kinds       []string
}

// members lists the live incarnations of the view, this node's among
// them, sorted by node.
func (v *view) members() []memberInfo {
	v.mu.RLock()
	out := make([]memberInfo, 0, len(v.nodes))
	for name, m := range v.nodes {
		out = append(out, memberInfo{node: name, incarnation: m.inc, kinds: append([]string(nil), m.kinds...)})
	}
	v.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].node < out[j].node })
	return out
}

// leasesHeld counts the activations running here under a lease that is
// still valid.
func (h *host) leasesHeld() int {
	n := 0
	for _, a := range h.running() {
		if a.lease != nil && a.lease.Valid() {
			n++
		}
	}
	return n
}

// size is the number of entries in the cache.
func (p *placementCache) size() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.m)
}
