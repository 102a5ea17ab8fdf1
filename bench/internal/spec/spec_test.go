package spec

import (
	"testing"
	"time"
)

func TestSpecArithmetic(t *testing.T) {
	s := point(OpSend, PathPooled, "data", 100000, 2*time.Second, 5)
	if s.IntendedPerS() != 50000 || s.Ideal() != 10*time.Second || s.Total() != 500_000 {
		t.Fatalf("intended %v ideal %v total %d", s.IntendedPerS(), s.Ideal(), s.Total())
	}
	u := s
	u.Pace = 0
	if u.Paced() || u.IntendedPerS() != 0 || u.Ideal() != 0 {
		t.Fatal("unpaced point has a rate")
	}
	if WarmupFor(1000) != 20 || WarmupFor(100000) != 1 {
		t.Fatal("warm-up")
	}
}

func TestSetsAreValidAndQuickHasTheRequiredPoints(t *testing.T) {
	for _, name := range []string{"quick", "full"} {
		set, err := ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range set.Points {
			if err := p.Validate(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	q := Quick()
	has := func(op, path string, writers int, paced bool) bool {
		for _, p := range q.Points {
			if p.Op == op && p.Path == path && p.Writers == writers && p.Paced() == paced && p.Payload == "data" &&
				p.WriterKind == KindActor && p.Receivers == ReceiversPerWriter {
				return true
			}
		}
		return false
	}
	for _, path := range Paths {
		if !has(OpSend, path, 1000, false) || !has(OpCall, path, 1000, false) {
			t.Errorf("quick lacks unpaced send/call on %s", path)
		}
	}
	for _, n := range []int{1000, 10000, 50000, 100000} {
		if !has(OpSend, PathNative, n, true) || !has(OpSend, PathPooled, n, true) {
			t.Errorf("quick lacks the paced send at %d writers", n)
		}
	}
	if _, err := ByName("nope"); err == nil {
		t.Error("unknown set accepted")
	}
}

func TestOrderInterleavesAndRotates(t *testing.T) {
	set := Set{Rounds: 2, Points: []Spec{
		point(OpSend, PathNative, "data", 10, 0, 1),
		point(OpSend, PathPooled, "data", 10, 0, 1),
		point(OpSend, PathNative, "data", 20, time.Second, 1),
		point(OpSend, PathPooled, "data", 20, time.Second, 1),
	}}
	var got []string
	for _, r := range set.Order() {
		got = append(got, r.Spec.Path[:1]+string(rune('0'+r.Round)))
	}
	want := []string{"n0", "p0", "p1", "n1", "n0", "p0"} // paced group: one round
	if len(got) != len(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, ok := range []Spec{gpoint(OpSend, PathLean, "bytes", 10, ReceiversOne, 1), point(OpCast, PathBridge, "data", 10, time.Second, 1)} {
		if err := ok.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	bad := []Spec{
		{Op: "poke", Path: PathNative, Writers: 1, PerWriter: 1, WriterKind: KindActor, Receivers: ReceiversOne},
		{Op: OpSend, Path: "smoke", Writers: 1, PerWriter: 1, WriterKind: KindActor, Receivers: ReceiversOne},
		{Op: OpSend, Path: PathNative, Writers: 0, PerWriter: 1, WriterKind: KindActor, Receivers: ReceiversOne},
		{Op: OpSend, Path: PathNative, Writers: 1, PerWriter: 1, Receivers: ReceiversOne},
		{Op: OpSend, Path: PathNative, Writers: 1, PerWriter: 1, WriterKind: KindActor},
		{Op: OpSend, Path: PathNative, Writers: 1, PerWriter: 1, WriterKind: KindGoroutine, Receivers: ReceiversOne, Pace: time.Second},
		gpoint(OpCall, PathLean, "bytes", 10, ReceiversOne, 1),
		gpoint(OpSend, PathLean, "bytes", 10, ReceiversPerWriter, 1),
		point(OpSend, PathLean, "bytes", 10, 0, 1),
	}
	for _, s := range bad {
		if s.Validate() == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}

// TestGroupsSeparateWriterKindsAndReceivers: points that differ in what
// the writers are, or whom they send to, are not compared side by side.
func TestGroupsSeparateWriterKindsAndReceivers(t *testing.T) {
	a := point(OpSend, PathPooled, "bytes", 1000, 0, 1)
	b := gpoint(OpSend, PathPooled, "bytes", 1000, ReceiversPerWriter, 1)
	c := gpoint(OpSend, PathPooled, "bytes", 1000, ReceiversOne, 1)
	d := gpoint(OpSend, PathLean, "bytes", 1000, ReceiversOne, 1)
	if a.Group() == b.Group() || b.Group() == c.Group() || c.Group() != d.Group() {
		t.Fatalf("groups %q %q %q %q", a.Group(), b.Group(), c.Group(), d.Group())
	}
	if c.ReceiverActors() != 1 || b.ReceiverActors() != 1000 {
		t.Fatal("receiver actors")
	}
}

func TestQuickHasTheServiceShapedPoints(t *testing.T) {
	q := Quick()
	find := func(want Spec) bool {
		for _, p := range q.Points {
			if p.Op == want.Op && p.Path == want.Path && p.Payload == want.Payload && p.Writers == want.Writers &&
				p.WriterKind == want.WriterKind && p.Receivers == want.Receivers && p.Paced() == want.Paced() {
				return true
			}
		}
		return false
	}
	for _, path := range withLean() {
		for _, payload := range []string{"bytes", "data"} {
			if !find(gpoint(OpSend, path, payload, 1000, ReceiversOne, 1)) {
				t.Errorf("quick lacks send %s, goroutines, one receiver, on %s", payload, path)
			}
		}
	}
	for _, path := range Paths {
		for _, want := range []Spec{
			gpoint(OpSend, path, "bytes", 1000, ReceiversPerWriter, 1),
			point(OpSend, path, "data-vt", 1000, 0, 1),
			gpoint(OpCall, path, "data", 1000, ReceiversPerWriter, 1),
			gpoint(OpCall, path, "bytes", 1, ReceiversPerWriter, 1),
		} {
			if !find(want) {
				t.Errorf("quick lacks %s", want)
			}
		}
	}
	if q.RawRTTs <= 0 {
		t.Error("quick has no raw ping-pong")
	}
}

// TestBothSetsRunTheBridgeBesideProtoactor: wherever the protoactor path
// runs, in quick and full, protoactor-bridge runs the same point (issue
// 19: what protoactor-go users gain without rewriting actors), send and
// call among them; its name in progress lines lines up with the others.
func TestBothSetsRunTheBridgeBesideProtoactor(t *testing.T) {
	for _, set := range []Set{Quick(), Full()} {
		bridge := map[string]bool{}
		for _, p := range set.Points {
			if p.Path == PathBridge {
				bridge[p.Group()] = true
			}
		}
		ops := map[string]bool{}
		for _, p := range set.Points {
			if p.Path == PathProtoactor {
				if !bridge[p.Group()] {
					t.Errorf("%s: %s runs without the bridge beside it", set.Name, p)
				}
				ops[p.Op] = true
			}
		}
		if !ops[OpSend] || !ops[OpCall] {
			t.Errorf("%s: protoactor (and so the bridge) lacks send or call: %v", set.Name, ops)
		}
		if len(bridge) == 0 {
			t.Errorf("%s: no bridge point", set.Name)
		}
	}
	a := point(OpSend, PathBridge, "data", 1000, 0, 1).String()
	b := point(OpSend, PathNative, "data", 1000, 0, 1).String()
	if len(a) != len(b) {
		t.Errorf("progress lines do not line up:\n%s\n%s", a, b)
	}
}
