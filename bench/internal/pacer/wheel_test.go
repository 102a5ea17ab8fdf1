package pacer

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestRingTakeEmptiesSlot(t *testing.T) {
	r := newRing(4)
	r.add(1, 7)
	r.add(5, 8) // same slot, next lap
	if got := r.take(1, nil); len(got) != 2 || got[0] != 7 || got[1] != 8 {
		t.Fatalf("take = %v", got)
	}
	if got := r.take(5, nil); len(got) != 0 {
		t.Fatalf("slot not emptied: %v", got)
	}
}

func TestAdvanceFiresInOrderAndOnlyDue(t *testing.T) {
	var fired []int32
	w, err := New(time.Millisecond, 100*time.Millisecond, func(id int32) { fired = append(fired, id) })
	if err != nil {
		t.Fatal(err)
	}
	w.start = time.Unix(1000, 0)
	w.At(w.start.Add(3*time.Millisecond), 3)
	w.At(w.start.Add(1*time.Millisecond), 1)
	w.At(w.start.Add(50*time.Millisecond), 50)
	w.advance(3)
	if len(fired) != 2 || fired[0] != 1 || fired[1] != 3 {
		t.Fatalf("fired %v, want [1 3]", fired)
	}
	// A time already past fires on the next slot.
	w.At(w.start, 99)
	w.advance(4)
	if len(fired) != 3 || fired[2] != 99 {
		t.Fatalf("fired %v, want 99 next", fired)
	}
	w.advance(60)
	if len(fired) != 4 || fired[3] != 50 {
		t.Fatalf("fired %v, want 50 last", fired)
	}
}

func TestHorizonIsEnforced(t *testing.T) {
	w, _ := New(time.Millisecond, 10*time.Millisecond, func(int32) {})
	defer func() {
		if recover() == nil {
			t.Fatal("scheduling past the horizon did not panic")
		}
	}()
	w.At(time.Now().Add(time.Second), 1)
}

func TestNewValidates(t *testing.T) {
	if _, err := New(0, time.Second, nil); err == nil {
		t.Fatal("zero resolution accepted")
	}
	if _, err := New(time.Second, time.Millisecond, nil); err == nil {
		t.Fatal("horizon below resolution accepted")
	}
}

func TestRunFiresOnTime(t *testing.T) {
	var mu sync.Mutex
	got := map[int32]time.Time{}
	done := make(chan struct{})
	w, _ := New(time.Millisecond, time.Second, func(id int32) {
		mu.Lock()
		got[id] = time.Now()
		if len(got) == 2 {
			close(done)
		}
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx)
	t0 := time.Now()
	w.At(t0.Add(20*time.Millisecond), 1)
	w.At(t0.Add(40*time.Millisecond), 2)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ids did not fire")
	}
	mu.Lock()
	defer mu.Unlock()
	for id, want := range map[int32]time.Duration{1: 20 * time.Millisecond, 2: 40 * time.Millisecond} {
		if d := got[id].Sub(t0); d < want {
			t.Errorf("id %d fired after %v, before its due %v", id, d, want)
		}
	}
}
