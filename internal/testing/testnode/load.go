package testnode

import (
	"context"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
)

// Load is a steady mix of calls to the test catalog of one node, for the
// tests that need live rates (the observer's charts, the metrics'
// scrapes): Workers goroutines each make a round every Every, an echo,
// and at every Nth round (counting from each worker's own offset) the
// failures asked for: an unknown function (not executed), a rejection
// (executed), a sleep past a 5ms deadline (may have executed). A zero N
// makes none of that failure.
type Load struct {
	Workers              int           // default 1
	Every                time.Duration // default 10ms
	NotExecutedEvery     int
	ExecutedEvery        int
	MayHaveExecutedEvery int
}

// Start runs l from sys against node until stop is called; stop waits
// for the calls in progress and may be called more than once.
func (l Load) Start(sys *actor.System, node string) (stop func()) {
	workers, every := max(l.Workers, 1), l.Every
	if every <= 0 {
		every = 10 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			tick := time.NewTicker(every) // pacing, not synchronisation
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				_, _ = sys.Call(ctx, node, "echo", &testpb.Echo{Text: "load"})
				round := i + 10*w
				if nth(round, l.NotExecutedEvery) {
					_, _ = sys.Call(ctx, node, "no_such_function", &testpb.Echo{})
				}
				if nth(round, l.ExecutedEvery) {
					_, _ = sys.Call(ctx, node, "reject", &testpb.Echo{Text: "no"})
				}
				if nth(round, l.MayHaveExecutedEvery) {
					short, cancelShort := context.WithTimeout(ctx, 5*time.Millisecond)
					_, _ = sys.Call(short, node, "sleep", &testpb.Sleep{Millis: 50})
					cancelShort()
				}
			}
		})
	}
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}

func nth(round, n int) bool { return n > 0 && round%n == 0 }
