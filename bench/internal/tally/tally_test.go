package tally

import (
	"sync"
	"testing"
)

func TestHitCompletesWhenEveryWriterIsFull(t *testing.T) {
	ta := New(3)
	ta.Arm(2, 0)
	for _, i := range []int{0, 1, 2, 0, 1} {
		ta.Hit(i)
	}
	if s := ta.Read(); s.EndNs != 0 || s.Full != 2 || s.Count != 5 {
		t.Fatalf("early completion: %+v", s)
	}
	ta.Hit(2)
	if s := ta.Read(); s.EndNs == 0 || s.Full != 3 || s.Count != 6 || s.Over != 0 {
		t.Fatalf("not complete: %+v", s)
	}
	ta.Hit(2)
	if s := ta.Read(); s.Over != 1 {
		t.Fatalf("overcount not seen: %+v", s)
	}
}

func TestArmResets(t *testing.T) {
	ta := New(2)
	ta.Arm(1, 0)
	ta.Hit(0)
	ta.Hit(1)
	ta.Arm(5, 0)
	if s := ta.Read(); s != (Snapshot{}) {
		t.Fatalf("arm did not reset: %+v", s)
	}
}

func TestHitAnyConcurrent(t *testing.T) {
	ta := New(0)
	ta.Arm(0, 8000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				ta.HitAny()
			}
		}()
	}
	wg.Wait()
	if s := ta.Read(); s.Count != 8000 || s.EndNs == 0 {
		t.Fatalf("%+v", s)
	}
}
