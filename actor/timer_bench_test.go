package actor

// Run: go test -run '^$' -bench Timers -benchmem -count 6 ./actor

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// BenchmarkTimers holds 100,000 timers pending on one System (reported
// as B/timer: the heap each keeps) and, with them pending, measures
//   - start-stop: starting and stopping one more timer, from an actor;
//   - fire: a timer firing, from the clock's callback to the actor's
//     Receive (ns/op is CPU per fire: b.N timers fire at one instant);
//   - fire-each: one timer firing alone per op, the callback re-arming
//     the clock each time (a fake clock's AfterFunc is in it).
func BenchmarkTimers(b *testing.B) {
	const pending = 100_000
	clk := NewFakeClock()
	s, err := Start(Config{Name: "bench", Logger: DiscardLogger(), Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Stop(context.Background()) })
	type arm struct {
		n    int
		d    time.Duration
		stop bool
	}
	ticks := make(chan struct{}, 1)
	var want, got int
	pid, err := s.SpawnFunc(func(c *Context) {
		switch m := c.Message().(type) {
		case arm:
			for range m.n {
				tm := c.SendAfter(m.d, "tick")
				if m.stop {
					tm.Stop()
				}
			}
			c.Respond(nil)
		case string:
			if got++; got == want {
				ticks <- struct{}{}
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := s.Request(ctx, pid, arm{n: pending, d: time.Hour}); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perTimer := float64(after.HeapAlloc-before.HeapAlloc) / pending
	goroutines := runtime.NumGoroutine()

	b.Run("start-stop", func(b *testing.B) {
		b.ReportAllocs()
		if _, err := s.Request(ctx, pid, arm{n: b.N, d: time.Minute, stop: true}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(perTimer, "B/timer")
	})
	b.Run("fire", func(b *testing.B) {
		want, got = b.N, 0
		if _, err := s.Request(ctx, pid, arm{n: b.N, d: time.Millisecond}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		clk.Advance(time.Millisecond)
		<-ticks
		b.StopTimer()
		b.ReportMetric(perTimer, "B/timer")
		if n := PendingTimers(s); n != pending {
			b.Fatalf("%d timers pending, want %d", n, pending)
		}
	})
	b.Run("fire-each", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			want, got = 1, 0
			if _, err := s.Request(ctx, pid, arm{n: 1, d: time.Millisecond}); err != nil {
				b.Fatal(err)
			}
			clk.Advance(time.Millisecond)
			<-ticks
		}
		b.ReportMetric(perTimer, "B/timer")
	})
	if g := runtime.NumGoroutine(); g > goroutines+2 {
		b.Fatalf("%d goroutines with %d timers pending, %d before", g, pending, goroutines)
	}
}
