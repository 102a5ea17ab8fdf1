package remote

import (
	"fmt"
	"sort"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
)

// What a peer leaves behind is bounded and goes with it:
//
//   - its announcement (CtlAnnounce) is bounded in bytes before it is
//     decoded (MaxAnnounceBytes) and dropped with its incarnation;
//   - the watches it holds on this node's actors are counted per
//     incarnation (MaxWatchesPerPeer) and removed from the actors when
//     the incarnation is gone;
//   - the table entry of a node name (slot) that discovery does not list,
//     that the user did not Connect to, and that has had no link for
//     ForgetNodesAfter is forgotten: its incarnation is gone for this
//     node, its tombstones and counters go too. At most MaxNodes names
//     are kept; a hello from a new name beyond it is refused when no
//     name without a live incarnation can be forgotten to make room.
//   - tombstones (incarnations declared gone) are kept per name, the
//     latest maxTombs of them.

// maxTombs bounds the incarnations remembered as gone per node name: a
// node that restarts often, or a peer that says hello under ever new
// incarnations, cannot grow the table.
const maxTombs = 64

// watchKey is one watch a peer holds on a local actor.
type watchKey struct{ watcher, target actor.PID }

// inWatch registers a peer's watch on a local actor, within the peer's
// bound. The watcher must be one of the peer's own actors. At the bound
// the watcher is told at once that the watch could not be kept (a
// termination whose reason wraps actor.ErrOverloaded).
func (n *Node) inWatch(p *peer, watcher, target actor.PID) {
	if watcher.Node != p.name || watcher.Incarnation != p.inc {
		n.stats.watchesRefused.Add(1)
		n.log.Debug("watch ignored: the watcher is not the peer's own actor", "peer", p.name, "watcher", watcher.String())
		return
	}
	k := watchKey{watcher, target}
	p.mu.Lock()
	if p.gone {
		p.mu.Unlock()
		return
	}
	_, dup := p.inWatches[k]
	full := !dup && len(p.inWatches) >= n.cfg.MaxWatchesPerPeer
	if !dup && !full {
		if p.inWatches == nil {
			p.inWatches = make(map[watchKey]struct{})
		}
		p.inWatches[k] = struct{}{}
	}
	p.mu.Unlock()
	if full {
		n.stats.watchesRefused.Add(1)
		n.log.Debug("watch refused: the peer holds too many", "peer", p.name, "max", n.cfg.MaxWatchesPerPeer)
		n.notifyTerminated(watcher, target, actor.NewError("watch", n.sys.Name(), n.sys.Incarnation(), target.String(),
			fmt.Errorf("%w: %s holds %d watches on %s (MaxWatchesPerPeer)", actor.ErrOverloaded, p.name, n.cfg.MaxWatchesPerPeer, n.sys.Name())))
		return
	}
	actorhooks.WatchLocal(n.sys, watcher, target)
}

// inUnwatch cancels a peer's watch.
func (n *Node) inUnwatch(p *peer, watcher, target actor.PID) {
	p.dropInWatch(watcher, target)
	actorhooks.UnwatchLocal(n.sys, watcher, target)
}

// dropInWatch forgets a watch that ended (the target terminated and the
// watcher was told, or it was cancelled).
func (p *peer) dropInWatch(watcher, target actor.PID) {
	p.mu.Lock()
	delete(p.inWatches, watchKey{watcher, target})
	p.mu.Unlock()
}

// dropInWatches removes a gone incarnation's watches from the actors.
func (n *Node) dropInWatches(ws map[watchKey]struct{}) {
	for k := range ws {
		actorhooks.UnwatchLocal(n.sys, k.watcher, k.target)
	}
}

// refuseAnnounce ignores an announcement over MaxAnnounceBytes, before
// it is decoded; the link stays up and the peer keeps what it announced
// before.
func (n *Node) refuseAnnounce(l *link, size int) {
	n.stats.announcesRefused.Add(1)
	n.log.Warn("announcement ignored", "peer", l.ends.PeerNode, "bytes", size, "reason", fmt.Sprintf("%d bytes exceeds MaxAnnounceBytes %d", size, n.cfg.MaxAnnounceBytes))
}

// bury records inc as gone, keeping the latest maxTombs. Under n.mu.
func (s *slot) bury(inc uint64, now time.Time) {
	if len(s.tomb) >= maxTombs {
		var oldest uint64
		var at time.Time
		for i, t := range s.tomb {
			if at.IsZero() || t.Before(at) {
				oldest, at = i, t
			}
		}
		delete(s.tomb, oldest)
	}
	s.tomb[inc] = now
}

// keep reports whether a slot must stay whatever its age: discovery lists
// the node, the user connected to it, a dial is running, or its
// incarnation has links. Under n.mu (takes the peer's lock).
func (s *slot) keep() bool {
	if s.listed || s.pinned || s.dialing != nil {
		return true
	}
	if p := s.cur; p != nil {
		p.mu.Lock()
		live := !p.gone && len(p.links) > 0
		p.mu.Unlock()
		return live
	}
	return false
}

// roomForNameLocked makes room for one more node name under MaxNodes,
// forgetting the longest unseen names that have no live incarnation; false
// when there is none to forget. Under n.mu.
func (n *Node) roomForNameLocked() bool {
	if len(n.slots) < n.cfg.MaxNodes {
		return true
	}
	var idle []*slot
	for _, s := range n.slots {
		if !s.keep() && (s.cur == nil || s.cur.isGone()) {
			idle = append(idle, s)
		}
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].seen.Before(idle[j].seen) })
	for _, s := range idle {
		if len(n.slots) < n.cfg.MaxNodes {
			break
		}
		n.forgetLocked(s)
	}
	return len(n.slots) < n.cfg.MaxNodes
}

// forgetLocked drops a slot and what is kept by node name. Under n.mu.
func (n *Node) forgetLocked(s *slot) {
	delete(n.slots, s.name)
	delete(n.poolStats, s.name)
	n.stats.nodesForgotten.Add(1)
}

// pruneNodes forgets the node names unseen for ForgetNodesAfter (the
// liveness loop calls it). An incarnation still known for such a name,
// with no link for that long, is gone for this node.
func (n *Node) pruneNodes(now time.Time) {
	var gone []*peer
	var names []string
	n.mu.Lock()
	for _, s := range n.slots {
		if s.keep() {
			s.seen = now
			continue
		}
		if now.Sub(s.seen) < n.cfg.ForgetNodesAfter {
			continue
		}
		if s.cur != nil && !s.cur.isGone() {
			gone = append(gone, s.cur)
		}
		n.forgetLocked(s)
		names = append(names, s.name)
	}
	n.mu.Unlock()
	for _, p := range gone {
		n.incarnationGone(p, fmt.Errorf("forgotten: no link to %s for %v and discovery does not list it", p.name, n.cfg.ForgetNodesAfter))
	}
	for _, name := range names {
		n.log.Debug("node name forgotten", "node", name)
		n.each(func(h *Hooks) {
			if h.OnForget != nil {
				h.OnForget(name)
			}
		})
	}
}

// pruneEvery is how often the liveness loop looks for names to forget.
func (c Config) pruneEvery() time.Duration {
	return min(max(c.ForgetNodesAfter/8, 5*time.Millisecond), 30*time.Second)
}
