package cluster

import (
	"sort"
	"strings"
	"sync"
)

// MetaKinds is the metadata key under which a node announces the kinds it
// hosts: a comma-separated list of kind names (discovery Meta with
// Consul, the links' announcements with Static).
const MetaKinds = "cluster_kinds"

// maxGoneRemembered bounds the incarnations of one node name the view
// remembers as gone, so a late announcement of a dead incarnation does
// not bring it back.
const maxGoneRemembered = 8

// view is a node's membership view for placement: the live incarnations
// and the kinds each hosts. It is a synchronous core: the cluster's hooks
// feed it; it never calls out.
type view struct {
	mu    sync.RWMutex // protects following
	self  string
	nodes map[string]*viewMember
	gone  map[string][]uint64 // node -> incarnations seen gone, newest last
	kinds map[string][]candidate
}

type viewMember struct {
	inc   uint64
	kinds []string
}

func newView(self string, selfInc uint64, selfKinds []string) *view {
	v := &view{self: self, nodes: map[string]*viewMember{}, gone: map[string][]uint64{}}
	v.nodes[self] = &viewMember{inc: selfInc, kinds: selfKinds}
	v.rebuildLocked()
	return v
}

// parseKinds reads the MetaKinds value of meta. ok is false when meta
// does not carry the key (an announcement of another layer, or none yet).
func parseKinds(meta map[string]string) (kinds []string, ok bool) {
	raw, ok := meta[MetaKinds]
	if !ok {
		return nil, false
	}
	for _, k := range strings.Split(raw, ",") {
		if k != "" {
			kinds = append(kinds, k)
		}
	}
	return kinds, true
}

// upsert records that node's incarnation inc is live, hosting kinds
// (hasKinds false: keep what was known of this incarnation). It reports
// whether placement changed. A node seen under a new incarnation
// replaces its old one; an incarnation reported gone is never taken back.
func (v *view) upsert(node string, inc uint64, kinds []string, hasKinds bool) bool {
	if inc == 0 || node == v.self {
		return false // a static seed before its handshake; self is ours
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, g := range v.gone[node] {
		if g == inc {
			return false
		}
	}
	m := v.nodes[node]
	switch {
	case m == nil || m.inc != inc:
		if m != nil {
			v.markGoneLocked(node, m.inc)
		}
		if !hasKinds {
			kinds = nil
		}
		v.nodes[node] = &viewMember{inc: inc, kinds: kinds}
	case hasKinds && !equalStrings(m.kinds, kinds):
		m.kinds = kinds
	default:
		return false
	}
	v.rebuildLocked()
	return true
}

// remove records that node's incarnation inc is gone.
func (v *view) remove(node string, inc uint64) bool {
	if node == v.self {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.markGoneLocked(node, inc)
	m := v.nodes[node]
	if m == nil || m.inc != inc {
		return false
	}
	delete(v.nodes, node)
	v.rebuildLocked()
	return true
}

func (v *view) markGoneLocked(node string, inc uint64) {
	g := append(v.gone[node], inc)
	if len(g) > maxGoneRemembered {
		g = g[len(g)-maxGoneRemembered:]
	}
	v.gone[node] = g
}

// suspend takes node's incarnation inc out of placement without
// counting it gone: it is unreachable for now (Static, where link
// liveness is all there is); upsert brings it back.
func (v *view) suspend(node string, inc uint64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.nodes[node]
	if node == v.self || m == nil || m.inc != inc {
		return false
	}
	delete(v.nodes, node)
	v.rebuildLocked()
	return true
}

// forget drops what the view keeps of a node name the remote layer forgot.
func (v *view) forget(node string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.gone, node)
}

func (v *view) rebuildLocked() {
	kinds := map[string][]candidate{}
	for name, m := range v.nodes {
		for _, k := range m.kinds {
			kinds[k] = append(kinds[k], candidate{node: name, incarnation: m.inc})
		}
	}
	for _, cs := range kinds {
		sort.Slice(cs, func(i, j int) bool { return cs[i].node < cs[j].node })
	}
	v.kinds = kinds
}

// owner is the rendezvous owner of (kind, identity) in this view.
func (v *view) owner(kind, identity string) (candidate, bool) {
	v.mu.RLock()
	cands := v.kinds[kind]
	v.mu.RUnlock()
	return owner(kind, identity, cands)
}

// previous is the owner of (kind, identity) among the hosts of kind
// other than this node: the node that owned it before this one joined,
// when the rest of the view has not changed since. ok is false when no
// other node hosts the kind.
func (v *view) previous(kind, identity string) (candidate, bool) {
	v.mu.RLock()
	cands := v.kinds[kind]
	v.mu.RUnlock()
	others := make([]candidate, 0, len(cands))
	for _, c := range cands {
		if c.node != v.self {
			others = append(others, c)
		}
	}
	return owner(kind, identity, others)
}

// hosts lists the live incarnations hosting kind.
func (v *view) hosts(kind string) []candidate {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return append([]candidate(nil), v.kinds[kind]...)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
