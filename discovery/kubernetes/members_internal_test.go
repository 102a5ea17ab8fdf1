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

func TestViewRules(t *testing.T) {
	t0 := time.Unix(1000, 0)
	v := newView(discovery.Member{Node: "self", Incarnation: 9}, time.Minute)
	v.setPod("a", podState{uid: "u1", running: true, ready: false})
	v.setLease(lease("a", 1, "a", "u1", "r1"), t0)
	if evs := v.events(t0); len(evs) != 0 {
		t.Fatalf("a pod never ready is up: %s", kinds(evs))
	}
	v.setPod("a", podState{uid: "u1", running: true, ready: true})
	if got := kinds(v.events(t0)); got != "up:a/0000000000000001 " {
		t.Fatalf("ready: %q", got)
	}
	// Renewed before TTL: stays up; not renewed past TTL: down.
	v.setLease(lease("a", 1, "a", "u1", "r2"), t0.Add(1500*time.Millisecond))
	if evs := v.events(t0.Add(3 * time.Second)); len(evs) != 0 {
		t.Fatalf("renewed lease went down: %s", kinds(evs))
	}
	if got := kinds(v.events(t0.Add(3600 * time.Millisecond))); got != "down:a/0000000000000001 " {
		t.Fatalf("expired: %q", got)
	}
	// Down is final, even when renewed again.
	v.setLease(lease("a", 1, "a", "u1", "r3"), t0.Add(4*time.Second))
	if evs := v.events(t0.Add(4 * time.Second)); len(evs) != 0 {
		t.Fatalf("a dead incarnation came back: %s", kinds(evs))
	}
	// A new incarnation on a replaced pod is up; the old pod UID is not.
	v.setPod("a", podState{uid: "u2", running: true, ready: true})
	v.setLease(lease("a", 2, "a", "u1", "r1"), t0.Add(5*time.Second))
	if evs := v.events(t0.Add(5 * time.Second)); len(evs) != 0 {
		t.Fatalf("a lease naming the old pod UID is up: %s", kinds(evs))
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
	if got := kinds(v.events(t0.Add(6 * time.Second))); got != "updated:a/0000000000000002 " {
		t.Fatalf("draining: %q", got)
	}
	// Terminating is down.
	v.setPod("a", podState{uid: "u2", running: true, ready: false, terminating: true})
	if got := kinds(v.events(t0.Add(6 * time.Second))); got != "down:a/0000000000000002 " {
		t.Fatalf("terminating: %q", got)
	}
	// A relist keeps the seen time of an unchanged renewal only.
	v.setPod("b", podState{uid: "b", running: true, ready: true})
	v.setLease(lease("b", 3, "b", "b", "r1"), t0)
	v.events(t0)
	// After an outage (fresh), nobody could renew: one TTL from the relist.
	v.relisted(v.pods, []leaseState{lease("b", 3, "b", "b", "r1")}, t0.Add(time.Second), true)
	if evs := v.events(t0.Add(2500 * time.Millisecond)); len(evs) != 0 {
		t.Fatalf("relist after an outage: %s", kinds(evs))
	}
	v.relisted(v.pods, []leaseState{lease("b", 3, "b", "b", "r1")}, t0.Add(2600*time.Millisecond), false)
	if got := kinds(v.events(t0.Add(3200 * time.Millisecond))); got != "down:b/0000000000000003 " {
		t.Fatalf("relist (410) with an unchanged renewal: %q", got)
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
