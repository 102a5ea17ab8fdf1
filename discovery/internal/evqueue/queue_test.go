package evqueue

import (
	"context"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every value pushed before Close is delivered once, in order, even when
// pushed from several goroutines (in each one's order); none after.
func TestOrderAndClose(t *testing.T) {
	q := New[int]()
	var got []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Run(context.Background(), func(v int) { got = append(got, v) })
	}()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 250 {
				q.Push(g*1000 + i)
			}
		}()
	}
	wg.Wait()
	q.Close()
	q.Close() // idempotent
	<-done
	q.Push(-1) // dropped after Close
	if len(got) != 1000 {
		t.Fatalf("delivered %d values, want 1000", len(got))
	}
	for g := range 4 {
		var mine []int
		for _, v := range got {
			if v/1000 == g {
				mine = append(mine, v)
			}
		}
		if !slices.IsSorted(mine) || len(mine) != 250 {
			t.Fatalf("pusher %d: %d values, out of order: %v", g, len(mine), mine)
		}
	}
}

// Abort drops what is left.
func TestAbort(t *testing.T) {
	q := New[string]()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q.Push("x")
	q.Run(ctx, func(string) { t.Error("delivered after abort") })
}
