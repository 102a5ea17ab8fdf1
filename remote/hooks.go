package remote

import (
	"time"

	"github.com/mailroom-go/mailroom/discovery"
)

// Hooks let the layers above (the proxy pool, services) follow what the
// remote layer sees. Every callback runs on a goroutine of the remote
// layer, possibly concurrently with others, and must not block. None
// runs with a lock of the remote layer held: a callback may send to the
// very peer it is told of, or ask the node about it (Peer, Links), as may
// a dead-letter subscriber given what a closing link drops.
type Hooks struct {
	// OnMember: a discovery event, after the node applied it.
	OnMember func(discovery.Event)
	// OnPeer: a native link to a peer incarnation came up.
	OnPeer func(PeerInfo)
	// OnLinkDown: a native link to a peer incarnation closed.
	OnLinkDown func(p PeerInfo, outbound bool)
	// OnPeerGone: a peer incarnation is gone for good.
	OnPeerGone func(PeerInfo)
	// OnAnnounce: a peer announced its draining flag and metadata.
	OnAnnounce func(p PeerInfo, draining bool, meta map[string]string)
	// OnForget: the node forgot a node name it had not seen for
	// Config.Liveness.ForgetNodesAfter (discovery does not list it; it had no
	// link). A layer drops what it keeps by that name.
	OnForget func(node string)
	// OnNativeTraffic: a Send, Cast, Request or Call to node took the
	// native path (no pool was published for it). Called on the sender's
	// goroutine, at most once a second per peer incarnation; a lazy proxy
	// pool builds a pool on it.
	OnNativeTraffic func(node string)
	// OnClose: the node has closed every link and stopped its goroutines
	// (the end of System.Stop's remote phase). A layer waits for its own
	// goroutines here.
	OnClose func()
}

// AddHooks adds h to the hooks every event is given to.
func (n *Node) AddHooks(h Hooks) {
	n.mu.Lock()
	defer n.mu.Unlock()
	cur := n.hooks.Load()
	var next []Hooks
	if cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, h)
	n.hooks.Store(&next)
	if h.OnNativeTraffic != nil {
		n.nativeWatched.Store(true)
	}
}

// each calls f for every installed hook set.
func (n *Node) each(f func(h *Hooks)) {
	if hs := n.hooks.Load(); hs != nil {
		for i := range *hs {
			f(&(*hs)[i])
		}
	}
}

// Peer is the current incarnation of node, if one is known.
func (n *Node) Peer(node string) (PeerInfo, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.slots[node]
	if s == nil || s.cur == nil || s.cur.isGone() {
		return PeerInfo{}, false
	}
	info := s.cur.info()
	info.Addr = s.addr
	if s.viaInc == s.cur.inc && s.via != "" {
		info.Addr = s.via
	}
	return info, true
}

// Peers are the current peer incarnations.
func (n *Node) Peers() []PeerInfo {
	var out []PeerInfo
	for _, p := range n.livePeers() {
		out = append(out, p.info())
	}
	return out
}

// nativeNoteEvery is how often a peer's native traffic is reported to
// OnNativeTraffic at most.
const nativeNoteEvery = int64(time.Second)

// noteNative reports native traffic to p to the OnNativeTraffic hooks,
// at most once per nativeNoteEvery. Callers check the node's
// nativeWatched first, so a node without such a hook pays one atomic
// load per message.
func (p *peer) noteNative() {
	now := time.Now().UnixNano()
	last := p.nativeNoted.Load()
	if now-last < nativeNoteEvery || !p.nativeNoted.CompareAndSwap(last, now) {
		return
	}
	p.node.each(func(h *Hooks) {
		if h.OnNativeTraffic != nil {
			h.OnNativeTraffic(p.name)
		}
	})
}

// Members are the members discovery lists now, this node excepted: the
// last MemberUp or MemberUpdated of each node name not followed by its
// MemberDown. A layer that adds its hooks after the node started reads
// them once, after AddHooks, to learn what the events before it said.
func (n *Node) Members() []discovery.Member {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []discovery.Member
	for _, s := range n.slots {
		if !s.marks.Listed() || s.member.Node == "" {
			continue
		}
		if _, dead := s.tomb[s.member.Incarnation]; dead && s.member.Incarnation != 0 {
			continue
		}
		out = append(out, s.member)
	}
	return out
}
