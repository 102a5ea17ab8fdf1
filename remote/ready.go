package remote

import (
	"context"
	"fmt"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
)

// readiness follows, from the node's own hooks, which peer incarnations
// have a native link up, for WaitPeer. It is bounded by the links: an
// incarnation leaves it when its last link closes or it is gone.
type readiness struct {
	mu      sync.Mutex // protects following
	links   map[string]*upPeer
	changed chan struct{} // closed and replaced on every change
	closed  bool          // the node has stopped
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
	r.changed = make(chan struct{})
	n.AddHooks(Hooks{
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

// up is node's incarnation with a link up, and the channel closed on the
// next change.
func (r *readiness) up(node string) (PeerInfo, bool, bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.links[node]
	if u == nil || u.n <= 0 {
		return PeerInfo{}, false, r.closed, r.changed
	}
	return u.info, true, r.closed, r.changed
}

// WaitPeer returns once this node has a live native link to node: the
// PeerInfo of the incarnation it reached. It waits on the node's link
// events (no polling) and does not dial: discovery links the nodes it
// lists as up, Connect dials one, and a Call or Request to node dials on
// first use. When ctx ends first, the error wraps ctx's error and names
// the node; when this node stops, it wraps actor.ErrStopped. A link can
// close again at any time after WaitPeer returns: calls report that with
// their outcome, as always.
//
// To wait for a node to come back after it restarted, wait until its old
// incarnation is gone first (a hook's OnPeerGone), or compare the
// incarnation WaitPeer returns.
func (n *Node) WaitPeer(ctx context.Context, node string) (PeerInfo, error) {
	if node == n.sys.Name() {
		return PeerInfo{}, fmt.Errorf("remote: WaitPeer(%q): that is this node", node)
	}
	for {
		info, ok, closed, changed := n.ready.up(node)
		switch {
		case ok:
			if p, known := n.Peer(node); known && p.Incarnation == info.Incarnation {
				return p, nil
			}
		case closed:
			return PeerInfo{}, fmt.Errorf("remote: waiting for a link to node %s: %w", node, actor.ErrStopped)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return PeerInfo{}, fmt.Errorf("remote: waiting for a link to node %s: none came up: %w", node, ctx.Err())
		}
	}
}
