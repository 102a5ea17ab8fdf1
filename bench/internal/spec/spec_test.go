package spec

import (
	"testing"
	"time"
)

func TestSpecArithmetic(t *testing.T) {
	s := Spec{Op: OpSend, Path: PathPooled, Payload: "data", Writers: 100000, Pace: 2 * time.Second, PerWriter: 5}
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
			if p.Op == op && p.Path == path && p.Writers == writers && p.Paced() == paced && p.Payload == "data" {
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
	bad := []Spec{
		{Op: "poke", Path: PathNative, Writers: 1, PerWriter: 1},
		{Op: OpSend, Path: "smoke", Writers: 1, PerWriter: 1},
		{Op: OpSend, Path: PathNative, Writers: 0, PerWriter: 1},
	}
	for _, s := range bad {
		if s.Validate() == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}
