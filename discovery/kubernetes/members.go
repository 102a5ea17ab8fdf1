package kubernetes

import (
	"maps"
	"slices"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
)

// podState is what membership needs of one pod.
type podState struct {
	uid         string
	running     bool // phase Running
	ready       bool // condition Ready is True
	terminating bool // deletionTimestamp set
}

// leaseState is one node's lease as this observer saw it.
type leaseState struct {
	member  discovery.Member
	pod     string
	podUID  string
	version string    // resourceVersion
	renew   string    // spec.renewTime as sent
	seen    time.Time // local time the renewal was last seen change
	ttl     time.Duration
}

// view is the synchronous membership core: the watcher feeds it pods and
// leases and asks for the events since the last call. Not safe for
// concurrent use; the watcher goroutine owns it.
//
// The view times leases only while it sees: while this node's own lease
// was seen renewed (on the watch, or in a list) within blindAfter. A node
// renews every RenewEvery; when its own renewals stop showing, the API or
// the watch is down for it, so nobody else's renewals can show either: it
// is blind, and an unrenewed lease then means a stale view, not a dead
// peer. Blind, it expires nobody (itself included); when it sees again,
// every lease gets one TTL from then.
//
// blindAfter is 1.5 RenewEvery, halfway between the two bounds it must
// respect: above RenewEvery (with the other half for the jitter of this
// node's own renewals), and below TTL - RenewEvery = 2 RenewEvery, how
// long the lease of a live peer that renewed just before the outage
// still has to run (with the other half for that peer's jitter).
type view struct {
	selfNode   string
	selfInc    uint64
	pods       map[string]podState   // by pod name
	leases     map[string]leaseState // by node name
	up         map[string]discovery.Member
	tomb       map[string]time.Time // incarnation IDs reported down, until forgotten
	tombFor    time.Duration
	blindAfter time.Duration
	blind      bool // as of the last events call
	stopping   bool
}

func newView(self discovery.Member, tombFor, renewEvery time.Duration) *view {
	return &view{
		selfNode: self.Node, selfInc: self.Incarnation,
		pods: map[string]podState{}, leases: map[string]leaseState{},
		up: map[string]discovery.Member{}, tomb: map[string]time.Time{}, tombFor: tombFor,
		blindAfter: renewEvery + renewEvery/2,
	}
}

// selfSeen is when this node's own lease was last seen renewed, zero if
// it is not in the view.
func (v *view) selfSeen() time.Time {
	if l, ok := v.leases[v.selfNode]; ok && l.member.Incarnation == v.selfInc {
		return l.seen
	}
	return time.Time{}
}

// sight reports whether the view can time leases at now, and on seeing
// again after being blind gives every lease one TTL from now.
func (v *view) sight(now time.Time) bool {
	seen := v.selfSeen()
	seeing := !seen.IsZero() && now.Sub(seen) <= v.blindAfter
	switch {
	case !seeing:
		v.blind = true
	case v.blind:
		v.blind = false
		for node, l := range v.leases {
			l.seen = now
			v.leases[node] = l
		}
	}
	return seeing
}

func (v *view) setPod(name string, p podState) { v.pods[name] = p }
func (v *view) delPod(name string)             { delete(v.pods, name) }
func (v *view) delLease(node string)           { delete(v.leases, node) }

// setLease records a lease; seen moves only when the renewal changed (or
// the lease is new), so an observer's own clock times the TTL.
func (v *view) setLease(l leaseState, now time.Time) {
	old, ok := v.leases[l.member.Node]
	l.seen = now
	if ok && old.renew == l.renew && old.member.Incarnation == l.member.Incarnation {
		l.seen = old.seen
	}
	v.leases[l.member.Node] = l
}

// relisted replaces pods and leases with a fresh list; a lease that was
// there before keeps its seen time only if its renewal did not change,
// unless fresh: after the API was unreachable nobody could renew, so every
// lease gets one TTL from now.
func (v *view) relisted(pods map[string]podState, leases []leaseState, now time.Time, fresh bool) {
	v.pods = pods
	old := v.leases
	v.leases = map[string]leaseState{}
	for _, l := range leases {
		if o, ok := old[l.member.Node]; ok && !fresh && o.renew == l.renew && o.member.Incarnation == l.member.Incarnation {
			l.seen = o.seen
		} else {
			l.seen = now
		}
		v.leases[l.member.Node] = l
	}
}

// alive is the membership rule: a node's incarnation is a member while
// its lease is fresh and names a pod that exists with the same UID, runs,
// and is Ready or draining (a draining node's pod turns not ready on
// purpose while its calls finish; a terminating pod drains, see
// reported). A lease is timed only when timed (the view sees, see sight).
func (v *view) alive(l leaseState, now time.Time, timed bool) bool {
	p, ok := v.pods[l.pod]
	if !ok || p.uid != l.podUID || !p.running {
		return false
	}
	if !p.ready && !v.reported(l).Draining {
		return false
	}
	return !timed || now.Sub(l.seen) <= l.ttl
}

// reported is the member a lease stands for: the one it publishes,
// draining once its pod is terminating. Kubernetes marks a pod
// terminating (deletionTimestamp) before preStop and SIGTERM, from which
// the node drains within the grace period: reporting it down at once
// would fail the calls it is finishing and make it refuse itself. It is
// down when it stops (its lease is deleted), its lease expires, or the
// pod object goes.
func (v *view) reported(l leaseState) discovery.Member {
	m := l.member
	if v.pods[l.pod].terminating {
		m.Draining = true
	}
	return m
}

// events compares what is alive now with what was reported and returns
// the events, in a stable order (downs first, then ups and updates, by
// node name).
func (v *view) events(now time.Time) []discovery.Event {
	timed := v.sight(now)
	var downs, ups []discovery.Event
	for _, node := range slices.Sorted(maps.Keys(v.up)) {
		m := v.up[node]
		l, ok := v.leases[node]
		if ok && l.member.Incarnation == m.Incarnation && v.alive(l, now, timed) {
			continue
		}
		if v.stopping && node == v.selfNode {
			continue
		}
		delete(v.up, node)
		v.tomb[m.ID()] = now
		downs = append(downs, discovery.Event{Type: discovery.MemberDown, Member: m})
	}
	for _, node := range slices.Sorted(maps.Keys(v.leases)) {
		l := v.leases[node]
		if _, dead := v.tomb[l.member.ID()]; dead || !v.alive(l, now, timed) {
			continue
		}
		m := v.reported(l)
		old, ok := v.up[node]
		switch {
		case !ok:
			ups = append(ups, discovery.Event{Type: discovery.MemberUp, Member: m})
		case !sameMember(old, m):
			ups = append(ups, discovery.Event{Type: discovery.MemberUpdated, Member: m})
		default:
			continue
		}
		v.up[node] = m
	}
	// A tomb is forgotten tombFor after the down, once no lease names
	// that incarnation any more: a lease still renewed (its node cut off
	// from the API alone came back) must not bring it up again.
	var named map[string]bool // built once, when a tomb is due
	for id, at := range v.tomb {
		if now.Sub(at) <= v.tombFor {
			continue
		}
		if named == nil {
			named = make(map[string]bool, len(v.leases))
			for _, l := range v.leases {
				named[l.member.ID()] = true
			}
		}
		if !named[id] {
			delete(v.tomb, id)
		}
	}
	return append(downs, ups...)
}

// selfDown reports whether self's incarnation was reported down.
func (v *view) selfDown(inc uint64) bool {
	_, dead := v.tomb[discovery.Member{Node: v.selfNode, Incarnation: inc}.ID()]
	return dead
}

func sameMember(a, b discovery.Member) bool {
	return a.Addr == b.Addr && a.PoolWorkers == b.PoolWorkers && a.Draining == b.Draining && maps.Equal(a.Meta, b.Meta)
}
