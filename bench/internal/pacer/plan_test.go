package pacer

import (
	"testing"
	"time"
)

func TestFirstDueStaggers(t *testing.T) {
	t0 := time.Unix(0, 0)
	if d := FirstDue(t0, 0, 4, time.Second).Sub(t0); d != 0 {
		t.Errorf("writer 0 at %v", d)
	}
	if d := FirstDue(t0, 3, 4, time.Second).Sub(t0); d != 750*time.Millisecond {
		t.Errorf("writer 3 of 4 at %v", d)
	}
}

func TestPlanKeepsPaceAndNeverBursts(t *testing.T) {
	t0 := time.Unix(0, 0)
	p := Plan{Left: 4, Due: t0, Pace: 100 * time.Millisecond}
	// On time: the next is one pace after the previous due time.
	next, ok := p.Next(t0.Add(time.Millisecond))
	if !ok || next.Sub(t0) != 100*time.Millisecond {
		t.Fatalf("next %v %v", next.Sub(t0), ok)
	}
	// Finished 350 ms late: the next is now, not three back-to-back.
	late := t0.Add(450 * time.Millisecond)
	next, ok = p.Next(late)
	if !ok || !next.Equal(late) {
		t.Fatalf("late next %v", next.Sub(t0))
	}
	next, ok = p.Next(late)
	if !ok || next.Sub(late) != 100*time.Millisecond {
		t.Fatalf("after catching up %v", next.Sub(late))
	}
	if _, ok := p.Next(late); ok {
		t.Fatal("a fifth operation was planned for four")
	}
}
