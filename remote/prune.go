package remote

import (
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
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
//     are kept, and at most a quarter of them from one source's hellos;
//     at either bound names nothing keeps are forgotten to make room
//     (below, "The names of the node table, per source").
//   - tombstones (incarnations declared gone) are kept per name, the
//     latest maxTombs of them.

// maxTombs bounds the incarnations remembered as gone per node name: a
// node that restarts often, or a peer that says hello under ever new
// incarnations, cannot grow the table.
const maxTombs = 64

// watchKey is one watch a peer holds on a local actor.
type watchKey struct{ watcher, target actor.PID }

// inWatch registers p's watch on a local actor, within p's bound. The
// watcher must be one of p's own actors. At the bound the watcher is
// told at once that the watch could not be kept (a termination whose
// reason wraps actor.ErrOverloaded).
func (p *peer) inWatch(watcher, target actor.PID) {
	n := p.node
	if watcher.Node != p.name || watcher.Incarnation != p.inc {
		n.stats.watchesRefused.Add(1)
		n.peerLine(slog.LevelDebug, "watch ignored: the watcher is not the peer's own actor", "peer", p.name, "watcher", watcher.String())
		return
	}
	k := watchKey{watcher, target}
	p.mu.Lock()
	if p.goneLocked() {
		p.mu.Unlock()
		return
	}
	_, dup := p.inWatches[k]
	full := !dup && len(p.inWatches) >= n.cfg.Limits.MaxWatchesPerPeer
	if !dup && !full {
		if p.inWatches == nil {
			p.inWatches = make(map[watchKey]struct{})
		}
		p.inWatches[k] = struct{}{}
	}
	p.mu.Unlock()
	if full {
		n.stats.watchesRefused.Add(1)
		n.peerLine(slog.LevelDebug, "watch refused: the peer holds too many", "peer", p.name, "max", n.cfg.Limits.MaxWatchesPerPeer)
		(*transport)(n).notifyTerminated(watcher, target, actor.NewError("watch", n.sys.Name(), n.sys.Incarnation(), target.String(),
			fmt.Errorf("%w: %s holds %d watches on %s (MaxWatchesPerPeer)", actor.ErrOverloaded, p.name, n.cfg.Limits.MaxWatchesPerPeer, n.sys.Name())))
		return
	}
	actorhooks.WatchLocal(n.sys, watcher, target)
}

// inUnwatch cancels p's watch.
func (p *peer) inUnwatch(watcher, target actor.PID) {
	p.dropInWatch(watcher, target)
	actorhooks.UnwatchLocal(p.node.sys, watcher, target)
}

// dropInWatch forgets a watch that ended (the target terminated and the
// watcher was told, or it was cancelled).
func (p *peer) dropInWatch(watcher, target actor.PID) {
	p.mu.Lock()
	delete(p.inWatches, watchKey{watcher, target})
	p.mu.Unlock()
}

// dropInWatches removes a gone incarnation's watches from n's actors.
func dropInWatches(n *Node, ws map[watchKey]struct{}) {
	for k := range ws {
		actorhooks.UnwatchLocal(n.sys, k.watcher, k.target)
	}
}

// refuseAnnounce ignores an announcement over MaxAnnounceBytes read on
// l, before it is decoded; l stays up and the peer keeps what it
// announced before.
func (l *link) refuseAnnounce(size int) {
	n := l.node
	n.stats.announcesRefused.Add(1)
	n.peerLine(slog.LevelWarn, "announcement ignored", "peer", l.ends.PeerNode, "bytes", size, "reason", fmt.Sprintf("%d bytes exceeds MaxAnnounceBytes %d", size, n.cfg.Limits.MaxAnnounceBytes))
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
	s.listDown(inc)
	// Only a dead process or a stranger answers there now.
	if s.altInc == inc {
		s.alt, s.altInc = "", 0
	}
	if s.viaInc == inc {
		s.via, s.viaInc = "", 0
	}
}

// maxListed bounds slot.ups: incarnations of one node listed up at once.
const maxListed = 4

// listUp records m, listed up by discovery, as the latest listed
// incarnation of its node (one without an address is not one to dial).
func (s *slot) listUp(m discovery.Member) {
	if m.Incarnation == 0 {
		return
	}
	s.listDown(m.Incarnation)
	if m.Addr == "" {
		return
	}
	if len(s.ups) >= maxListed {
		s.ups = slices.Delete(s.ups, 0, 1)
	}
	s.ups = append(s.ups, m)
}

// listDown forgets incarnation inc of the listed ones (0: all of them,
// for a provider that does not tell incarnations apart).
func (s *slot) listDown(inc uint64) {
	if inc == 0 {
		s.ups = nil
		return
	}
	s.ups = slices.DeleteFunc(s.ups, func(m discovery.Member) bool { return m.Incarnation == inc })
}

// keep reports whether a slot must stay whatever its age: discovery lists
// the node, the user connected to it, a dial is running, or its
// incarnation has links. Under n.mu (takes the peer's lock).
func (s *slot) keep() bool {
	if s.marks.Listed() || s.marks.Pinned() || s.dialing != nil {
		return true
	}
	if p := s.cur; p != nil {
		p.mu.Lock()
		live := !p.goneLocked() && len(p.links) > 0
		p.mu.Unlock()
		return live
	}
	return false
}

// The names of the node table, per source. A cookie holder can say
// hello under as many names as it likes, and each one it leaves without
// a link would stay for ForgetNodesAfter: at MaxNodes, new names (real
// nodes among them) were refused for that long. So a name learned from a
// hello counts against the source address it came from (sourceOf, as for
// handshakes), which may hold at most a quarter of MaxNodes; and at
// either bound room is made by forgetting names nothing keeps (no live
// link, not listed, not connected to, no dial: slot.keep), the longest
// unseen first: the source's own at its quota, at MaxNodes those of the
// source holding the most. A name is refused too_many_nodes only when
// nothing can be forgotten. A forgotten name's incarnation is gone for
// this node, as after ForgetNodesAfter.

// namesPerSource is how many names one source's hellos may hold.
func (c Config) namesPerSource() int { return max(c.Limits.MaxNodes/4, 1) }

// forgetBatch is how many names a full table forgets at once, so that
// finding them (a sort of the table) is paid once per batch of hellos.
func (c Config) forgetBatch() int { return max(c.Limits.MaxNodes/64, 1) }

// forgotten is a name forgotten, with the incarnation that goes with it.
type forgotten struct {
	name string
	cur  *peer // not gone when it was forgotten; nil if none
}

// roomForNameLocked makes room for a new name from src (a hello's source;
// "" when it did not come from a hello) under MaxNodes and src's quota,
// forgetting names nothing keeps; false when there is none to forget. The
// caller calls afterForget with what it returns, once n.mu is released.
// Under n.mu.
func (n *Node) roomForNameLocked(src string) (gone []forgotten, ok bool) {
	full := func() bool {
		return len(n.slots) >= n.cfg.Limits.MaxNodes || (src != "" && n.namesBySrc[src] >= n.cfg.namesPerSource())
	}
	if !full() {
		return nil, true
	}
	atQuota := src != "" && n.namesBySrc[src] >= n.cfg.namesPerSource()
	from := src // at its quota, the source's own names; at MaxNodes, the largest source's
	if !atQuota {
		from = ""
		for s, c := range n.namesBySrc {
			if from == "" || c > n.namesBySrc[from] {
				from = s
			}
		}
	}
	var idle []*slot
	for _, s := range n.slots {
		if (from == "" || s.src == from) && !s.keep() {
			idle = append(idle, s)
		}
	}
	if len(idle) == 0 && !atQuota {
		// The largest source holds only live names: any other will do.
		for _, s := range n.slots {
			if !s.keep() {
				idle = append(idle, s)
			}
		}
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].seen.Before(idle[j].seen) })
	for i, s := range idle {
		if i >= n.cfg.forgetBatch() && !full() {
			break
		}
		gone = append(gone, forgotten{name: s.name, cur: s.cur})
		n.forgetLocked(s)
	}
	return gone, !full()
}

// forgetLocked drops a slot and what is kept by node name. Under n.mu.
func (n *Node) forgetLocked(s *slot) {
	delete(n.slots, s.name)
	delete(n.poolStats, s.name)
	if s.src != "" {
		if n.namesBySrc[s.src]--; n.namesBySrc[s.src] <= 0 {
			delete(n.namesBySrc, s.src)
		}
	}
	n.stats.nodesForgotten.Add(1)
}

// afterForget ends the incarnations of forgotten names and tells the
// layers (Hooks.OnForget), with no lock held.
func (n *Node) afterForget(gone []forgotten, why error) {
	for _, f := range gone {
		if f.cur != nil && !f.cur.isGone() {
			n.incarnationGone(f.cur, why)
		}
	}
	for _, f := range gone {
		n.peerLine(slog.LevelDebug, "node name forgotten", "peer", f.name, "why", why)
		n.each(func(h *Hooks) {
			if h.OnForget != nil {
				h.OnForget(f.name)
			}
		})
	}
}

// pruneNodes forgets the node names unseen for ForgetNodesAfter (the
// liveness step calls it: tick). An incarnation still known for such a name,
// with no link for that long, is gone for this node.
func (lv *liveness) pruneNodes(now time.Time) {
	n := lv.node
	var gone []forgotten
	n.mu.Lock()
	for _, s := range n.slots {
		if s.keep() {
			s.seen = now
			continue
		}
		if now.Sub(s.seen) < n.cfg.Liveness.ForgetNodesAfter {
			continue
		}
		gone = append(gone, forgotten{name: s.name, cur: s.cur})
		n.forgetLocked(s)
	}
	n.mu.Unlock()
	n.afterForget(gone, fmt.Errorf("forgotten: no link for %v and discovery does not list it", n.cfg.Liveness.ForgetNodesAfter))
}

// pruneEvery is how often the liveness loop looks for names to forget.
func (c Config) pruneEvery() time.Duration {
	return min(max(c.Liveness.ForgetNodesAfter/8, 5*time.Millisecond), 30*time.Second)
}
