package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
)

// readiness follows, from the node's own hooks, which peer incarnations
// have a native link up, for WaitPeer. It is bounded by the links: an
// incarnation leaves it when its last link closes or it is gone.
type readiness struct {
	mu      sync.Mutex // protects following
	links   map[string]*upPeer
	listed  map[string]uint64 // discovery's up events per node, until it is forgotten
	changed chan struct{}     // closed and replaced on every change
	closed  bool              // the node has stopped
}

// upPeer is the current incarnation of a node and its native links up
// (transiently negative when a link's down event overtakes its up event).
type upPeer struct {
	info PeerInfo
	n    int
}

// install makes r follow n's links; before n starts linking.
func (r *readiness) install(n *Node) {
	r.links = make(map[string]*upPeer)
	r.listed = make(map[string]uint64)
	r.changed = make(chan struct{})
	n.AddHooks(Hooks{
		OnMember:   r.member,
		OnForget:   r.forget,
		OnPeer:     func(p PeerInfo) { r.link(p, +1) },
		OnLinkDown: func(p PeerInfo, _ bool) { r.link(p, -1) },
		OnPeerGone: r.gone,
		OnClose:    r.close,
	})
}

func (r *readiness) link(p PeerInfo, d int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.links[p.Node]
	if u == nil || u.info.Incarnation != p.Incarnation {
		if d < 0 && u != nil {
			return // a link of an incarnation already replaced
		}
		u = &upPeer{}
		r.links[p.Node] = u
	}
	u.info, u.n = p, u.n+d
	if u.n == 0 {
		delete(r.links, p.Node)
	}
	r.changedLocked()
}

func (r *readiness) member(ev discovery.Event) {
	if ev.Type != discovery.MemberUp && ev.Type != discovery.MemberUpdated {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listed[ev.Member.Node]++
	r.changedLocked()
}

func (r *readiness) forget(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.listed, node)
}

func (r *readiness) gone(p PeerInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u := r.links[p.Node]; u != nil && u.info.Incarnation == p.Incarnation {
		delete(r.links, p.Node)
		r.changedLocked()
	}
}

func (r *readiness) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.changedLocked()
}

func (r *readiness) changedLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// readyState is what WaitPeer reads of one node.
type readyState struct {
	info    PeerInfo
	up      bool          // info's incarnation has a native link up
	closed  bool          // the node has stopped
	listed  uint64        // discovery's up events for it so far
	changed chan struct{} // closed on the next change
}

func (r *readiness) state(node string) readyState {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := readyState{closed: r.closed, listed: r.listed[node], changed: r.changed}
	if u := r.links[node]; u != nil && u.n > 0 {
		st.info, st.up = u.info, true
	}
	return st
}

// WaitPeer returns once this node has a live native link to node: the
// PeerInfo of the incarnation it reached. It waits on the node's own link
// and discovery events, with no polling: it dials node (as Connect does,
// but the link is not kept: it closes when idle, Config.LinkIdleTimeout)
// once at the start and again after each event of discovery listing node
// as up (a Consul member is otherwise linked on the first message to it; a
// Static seed is kept linked by the node), and returns as soon as any
// link to node is up, whoever made it (a Connect, a Call, the seed
// keeper, the peer dialling in). When ctx ends first, the error
// wraps ctx's error and names the node and the last dial's failure; when
// this node stops, it wraps actor.ErrStopped. A link can close again at
// any time after WaitPeer returns: calls report that with their outcome,
// as always.
//
// To wait for a node to come back after it restarted, wait until its old
// incarnation has no link (or is gone), or compare the incarnation
// WaitPeer returns.
func (n *Node) WaitPeer(ctx context.Context, node string) (PeerInfo, error) {
	if node == n.sys.Name() {
		return PeerInfo{}, fmt.Errorf("remote: WaitPeer(%q): that is this node", node)
	}
	var dialErr error
	dialed, first := uint64(0), true
	for {
		st := n.ready.state(node)
		switch {
		case st.up:
			if p, known := n.Peer(node); known && p.Incarnation == st.info.Incarnation {
				return p, nil
			}
		case st.closed:
			return PeerInfo{}, fmt.Errorf("remote: waiting for a link to node %s: %w", node, actor.ErrStopped)
		case first || st.listed != dialed:
			first, dialed = false, st.listed
			if _, _, dialErr = n.connect(ctx, node); dialErr == nil { // not Connect: the link is not kept from closing idle
				continue // its link event is on its way, or already in
			}
		}
		select {
		case <-st.changed:
		case <-ctx.Done():
			why := ""
			if dialErr != nil && !errors.Is(dialErr, ctx.Err()) {
				why = " (last dial: " + dialErr.Error() + ")"
			}
			return PeerInfo{}, fmt.Errorf("remote: waiting for a link to node %s: none came up%s: %w", node, why, ctx.Err())
		}
	}
}
