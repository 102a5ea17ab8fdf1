package kubernetes

import (
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
)

func lease(node string, inc uint64, pod, uid, renew string) leaseState {
	return leaseState{member: discovery.Member{Node: node, Incarnation: inc, Addr: "127.0.0.1:1"}, pod: pod, podUID: uid, renew: renew, ttl: 2 * time.Second}
}

func kinds(evs []discovery.Event) string {
	s := ""
	for _, e := range evs {
		s += e.Type.String() + ":" + e.Member.ID() + " "
	}
	return s
}

// renewEvery is the view's RenewEvery in these tests: blind after 750ms
// without a renewal of its own.
const renewEvery = 500 * time.Millisecond

// testView is a view whose own node, "self", runs on pod "self".
func testView(t0 time.Time) *view {
	v := newView(discovery.Member{Node: "self", Incarnation: 9}, time.Minute, renewEvery)
	v.setPod("self", podState{uid: "us", running: true, ready: true})
	see(v, t0)
	return v
}

// see records a renewal of self's own lease seen at at.
func see(v *view, at time.Time) {
	v.setLease(lease("self", 9, "self", "us", at.Format(time.RFC3339Nano)), at)
}

// seeing renews self's lease every renewEvery from..to, as a healthy
// node does, asking for events at each step; it returns them.
func seeing(v *view, from, to time.Time) string {
	got := ""
	for at := from; !at.After(to); at = at.Add(renewEvery) {
		see(v, at)
		got += kinds(v.events(at))
	}
	return got
}

func TestViewRules(t *testing.T) {
	t0 := time.Unix(1000, 0)
	v := testView(t0)
	v.setPod("a", podState{uid: "u1", running: true, ready: false})
	v.setLease(lease("a", 1, "a", "u1", "r1"), t0)
	if got := kinds(v.events(t0)); got != "up:self/0000000000000009 " {
		t.Fatalf("a pod never ready is up: %s", got)
	}
	v.setPod("a", podState{uid: "u1", running: true, ready: true})
	if got := kinds(v.events(t0)); got != "up:a/0000000000000001 " {
		t.Fatalf("ready: %q", got)
	}
	// Renewed before TTL: stays up; not renewed past TTL: down.
	v.setLease(lease("a", 1, "a", "u1", "r2"), t0.Add(1500*time.Millisecond))
	if got := seeing(v, t0, t0.Add(3*time.Second)); got != "" {
		t.Fatalf("renewed lease went down: %s", got)
	}
	see(v, t0.Add(3600*time.Millisecond))
	if got := kinds(v.events(t0.Add(3600 * time.Millisecond))); got != "down:a/0000000000000001 " {
		t.Fatalf("expired: %q", got)
	}
	// Down is final, even when renewed again.
	v.setLease(lease("a", 1, "a", "u1", "r3"), t0.Add(4*time.Second))
	if got := seeing(v, t0.Add(4*time.Second), t0.Add(4*time.Second)); got != "" {
		t.Fatalf("a dead incarnation came back: %s", got)
	}
	// A new incarnation on a replaced pod is up; the old pod UID is not.
	v.setPod("a", podState{uid: "u2", running: true, ready: true})
	v.setLease(lease("a", 2, "a", "u1", "r1"), t0.Add(5*time.Second))
	if got := seeing(v, t0.Add(5*time.Second), t0.Add(5*time.Second)); got != "" {
		t.Fatalf("a lease naming the old pod UID is up: %s", got)
	}
	v.setLease(lease("a", 2, "a", "u2", "r1"), t0.Add(5*time.Second))
	if got := kinds(v.events(t0.Add(5 * time.Second))); got != "up:a/0000000000000002 " {
		t.Fatalf("new incarnation: %q", got)
	}
	// Draining: a not-ready pod stays up, with an update.
	l := lease("a", 2, "a", "u2", "r2")
	l.member.Draining = true
	v.setLease(l, t0.Add(6*time.Second))
	v.setPod("a", podState{uid: "u2", running: true, ready: false})
	if got := seeing(v, t0.Add(6*time.Second), t0.Add(6*time.Second)); got != "updated:a/0000000000000002 " {
		t.Fatalf("draining: %q", got)
	}
	// A terminating pod drains, ready or not, until its lease goes.
	v.setPod("b", podState{uid: "b", running: true, ready: true})
	v.setLease(lease("b", 3, "b", "b", "r1"), t0.Add(6*time.Second))
	if got := kinds(v.events(t0.Add(6 * time.Second))); got != "up:b/0000000000000003 " {
		t.Fatalf("b: %q", got)
	}
	v.setPod("b", podState{uid: "b", running: true, ready: true, terminating: true})
	evs := v.events(t0.Add(6 * time.Second))
	if got := kinds(evs); got != "updated:b/0000000000000003 " || !evs[0].Member.Draining {
		t.Fatalf("terminating: %q %+v", got, evs)
	}
	v.setPod("b", podState{uid: "b", running: true, ready: false, terminating: true})
	if got := kinds(v.events(t0.Add(6 * time.Second))); got != "" {
		t.Fatalf("terminating, then not ready: %q", got)
	}
	v.delLease("b")
	if got := kinds(v.events(t0.Add(6 * time.Second))); got != "down:b/0000000000000003 " {
		t.Fatalf("terminating, lease deleted: %q", got)
	}
	// Not running (the kubelet killed it) is down.
	v.setPod("a", podState{uid: "u2", running: false, ready: false})
	if got := kinds(v.events(t0.Add(6 * time.Second))); got != "down:a/0000000000000002 " {
		t.Fatalf("not running: %q", got)
	}
}

// A relist keeps the seen time of an unchanged renewal only; after an
// outage (fresh) nobody could renew, so every lease gets one TTL from the
// relist.
func TestViewRelist(t *testing.T) {
	t0 := time.Unix(1000, 0)
	v := testView(t0)
	v.setPod("b", podState{uid: "b", running: true, ready: true})
	v.setLease(lease("b", 3, "b", "b", "r1"), t0)
	v.events(t0)
	self := v.leases["self"]
	self.seen = t0.Add(time.Second) // a relist sees self's newest renewal
	v.relisted(v.pods, []leaseState{lease("b", 3, "b", "b", "r1"), self}, t0.Add(time.Second), true)
	if got := seeing(v, t0.Add(time.Second), t0.Add(2500*time.Millisecond)); got != "" {
		t.Fatalf("relist after an outage: %s", got)
	}
	self = v.leases["self"]
	v.relisted(v.pods, []leaseState{lease("b", 3, "b", "b", "r1"), self}, t0.Add(2600*time.Millisecond), false)
	see(v, t0.Add(3200*time.Millisecond))
	if got := kinds(v.events(t0.Add(3200 * time.Millisecond))); got != "down:b/0000000000000003 " {
		t.Fatalf("relist (410) with an unchanged renewal: %q", got)
	}
}

// Blind: when this node's own renewals stop showing (the API or the
// watch is down for it), nobody expires, itself included, however long
// it lasts; once they show again, every lease gets one TTL from then:
// a live peer renewing again stays up, a peer that froze meanwhile goes
// down a TTL after the view sees again.
func TestViewBlind(t *testing.T) {
	t0 := time.Unix(1000, 0)
	v := testView(t0)
	for _, n := range []string{"live", "frozen"} {
		v.setPod(n, podState{uid: n, running: true, ready: true})
		v.setLease(lease(n, 1, n, n, "r0"), t0)
	}
	if got := kinds(v.events(t0)); got != "up:frozen/0000000000000001 up:live/0000000000000001 up:self/0000000000000009 " {
		t.Fatalf("start: %q", got)
	}
	// The last renewals before the outage: frozen at +1.3s (then it
	// froze), live at +1.4s, self at +1.5s.
	v.setLease(lease("frozen", 1, "frozen", "frozen", "r1"), t0.Add(1300*time.Millisecond))
	v.setLease(lease("live", 1, "live", "live", "r1"), t0.Add(1400*time.Millisecond))
	if got := seeing(v, t0, t0.Add(1500*time.Millisecond)); got != "" {
		t.Fatalf("before the outage: %q", got)
	}
	// The outage: nothing more is seen, for much longer than the TTL.
	for at := t0.Add(1600 * time.Millisecond); at.Before(t0.Add(20 * time.Second)); at = at.Add(100 * time.Millisecond) {
		if got := kinds(v.events(at)); got != "" {
			t.Fatalf("blind at %v: %q", at.Sub(t0), got)
		}
		if want := at.Sub(t0) > 2250*time.Millisecond; v.blind != want {
			t.Fatalf("at %v: blind %v, want %v", at.Sub(t0), v.blind, want)
		}
	}
	// Back at +20s: self's renewal shows first; live renews 0.4s later,
	// frozen never does.
	back := t0.Add(20 * time.Second)
	see(v, back)
	if got := kinds(v.events(back)); got != "" || v.blind {
		t.Fatalf("seeing again: %q (blind %v)", got, v.blind)
	}
	v.setLease(lease("live", 1, "live", "live", "r2"), back.Add(400*time.Millisecond))
	if got := seeing(v, back, back.Add(2*time.Second)); got != "" {
		t.Fatalf("within a TTL of seeing again: %q", got)
	}
	see(v, back.Add(2100*time.Millisecond))
	if got := kinds(v.events(back.Add(2100 * time.Millisecond))); got != "down:frozen/0000000000000001 " {
		t.Fatalf("a TTL after seeing again: %q", got)
	}
}

// A tomb outlives tombFor while a lease still names its incarnation: a
// node reported down that renews again (cut off from the API alone, it
// came back) is never reported up again.
func TestViewTombWhileNamed(t *testing.T) {
	t0 := time.Unix(1000, 0)
	v := testView(t0)
	v.setPod("a", podState{uid: "a", running: true, ready: true})
	v.setLease(lease("a", 1, "a", "a", "r0"), t0)
	v.events(t0)
	if got := seeing(v, t0.Add(renewEvery), t0.Add(2500*time.Millisecond)); got != "down:a/0000000000000001 " {
		t.Fatalf("expiry: %q", got)
	}
	// Its lease renews again, for longer than tombFor (a minute).
	for at := t0.Add(3 * time.Second); at.Before(t0.Add(2 * time.Minute)); at = at.Add(time.Second) {
		v.setLease(lease("a", 1, "a", "a", at.Format(time.RFC3339Nano)), at)
		if got := seeing(v, at, at); got != "" {
			t.Fatalf("at %v: %q", at.Sub(t0), got)
		}
	}
	// Its lease gone, the tomb is forgotten after tombFor.
	v.delLease("a")
	end := t0.Add(2 * time.Minute)
	seeing(v, end, end)
	if _, ok := v.tomb["a/0000000000000001"]; ok {
		t.Fatal("the tomb outlived its lease by more than tombFor")
	}
}

func TestLeaseRoundTrip(t *testing.T) {
	m := discovery.Member{Node: "Node_1", Incarnation: 0xabc, Addr: "10.0.0.1:7946", PoolWorkers: 4, Draining: true, Meta: map[string]string{"svc.orders": "v1"}}
	if err := validateSelf(m); err != nil {
		t.Fatal(err)
	}
	name := leaseName("mailroom-", m.Node)
	if name != "mailroom-x4eodex5f1" {
		t.Fatalf("lease name %q", name)
	}
	got, err := parseLease(newLease(name, m, "pod-1", "uid-1", 3*time.Second, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if got.member.ID() != m.ID() || !sameMember(got.member, m) || got.pod != "pod-1" || got.podUID != "uid-1" || got.ttl != 3*time.Second {
		t.Fatalf("round trip: %+v", got)
	}
	bad := newLease(name, m, "pod-1", "uid-1", 3*time.Second, time.Now())
	bad.Annotations[annPool] = "999999999"
	if _, err := parseLease(bad); err == nil {
		t.Fatal("a hostile pool size was accepted")
	}
	if err := validateSelf(discovery.Member{Node: "n", Incarnation: 1, Addr: "x:1", Meta: map[string]string{"bad key": "v"}}); err == nil {
		t.Fatal("a bad meta key was accepted")
	}
}
