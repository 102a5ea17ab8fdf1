package remote

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

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

// waitPeerRedial is how often WaitPeer dials while node is not callable
// (jittered in [waitPeerRedial/2, waitPeerRedial)): a waiter is told
// within about one dial of the peer being ready, however long it was down,
// and a refused dial on a down peer costs little. Concurrent waiters and
// callers share one dial (connect's dialAttempt).
const waitPeerRedial = 30 * time.Millisecond

// WaitPeer returns once node is callable from here: this node has its own
// live native link to node's current incarnation (the link calls,
// requests and sends use when no pool is up), and it returns the PeerInfo
// of that incarnation. A link node dialled to us is not enough: WaitPeer
// dials back. While node is not callable WaitPeer dials it itself (as
// Connect does, but the link is not kept: it closes when idle,
// Config.Liveness.LinkIdleTimeout) every waitPeerRedial (30 ms, jittered), and at
// once on news of it (discovery listing it up, a link from it coming up:
// its hello may bring a new address), so it returns within about one dial
// of node being ready, after an outage of any length; it does not wait for
// the seed keeper's backoff. When ctx ends first, the error wraps ctx's
// error and names the node and the last dial's failure; when this node
// stops, it wraps actor.ErrStopped. A link can close again at any time
// after WaitPeer returns: calls report that with their outcome, as always.
//
// Which address is dialled: the one discovery gives, and for a Static
// seed (or an address given to Connect) the configured one, always first.
// When a dial to a configured address fails, the address the node
// announced in the authenticated hello of a link it dialled to us (its
// Config.Advertise, or its listener's) is dialled next, in the same
// attempt: a seed restarted on a new port is called there, while where
// nodes reach each other through a proxy or NAT (the announced address
// unreachable from here, or reachable only another way) the configured
// address keeps winning as long as it answers. The announced address is
// forgotten with the incarnation that announced it. docs/SECURITY.md says
// what this lets a cookie holder do.
//
// To wait for a node to come back after it restarted, wait until its old
// incarnation has no link (or is gone), or compare the incarnation
// WaitPeer returns.
func (n *Node) WaitPeer(ctx context.Context, node string) (PeerInfo, error) {
	if node == n.sys.Name() {
		return PeerInfo{}, fmt.Errorf("remote: WaitPeer(%q): that is this node", node)
	}
	var dialErr error
	// redial is armed after every dial, failed or not: a link that came up
	// and closed again before it was seen is dialled again at the next
	// tick, not on the next event only.
	redial := time.NewTimer(time.Hour)
	defer redial.Stop()
	dialed, wasUp, due := uint64(0), false, true
	for {
		st := n.ready.state(node)
		if st.closed {
			return PeerInfo{}, fmt.Errorf("remote: waiting for a link to node %s: %w", node, actor.ErrStopped)
		}
		if p, l := n.dial.live(node); l != nil {
			if info, known := n.Peer(node); known && info.Incarnation == p.inc {
				return info, nil
			}
		}
		if st.listed != dialed || (st.up && !wasUp) {
			due = true // news of node: dial now, not at the next tick
		}
		dialed, wasUp = st.listed, st.up
		if due {
			due = false
			_, _, err := n.dial.connect(ctx, node) // not Connect: the link is not kept from closing idle
			redial.Reset(waitPeerRedial/2 + rand.N(waitPeerRedial/2))
			if err == nil {
				continue // its link is up: the check above returns
			}
			if ctx.Err() == nil || dialErr == nil {
				dialErr = err // the last failure that is the peer's, not our ctx ending it
			}
		}
		select {
		case <-st.changed:
		case <-redial.C:
			due = true
		case <-ctx.Done():
			why := ""
			if dialErr != nil && !errors.Is(dialErr, ctx.Err()) {
				why = " (last dial: " + dialErr.Error() + ")"
			}
			return PeerInfo{}, fmt.Errorf("remote: waiting for a link to node %s: none came up%s: %w", node, why, ctx.Err())
		}
	}
}
