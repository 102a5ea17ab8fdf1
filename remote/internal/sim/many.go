package sim

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/mailroom-go/mailroom/remote/internal/peers"
)

// Summary sums many runs.
type Summary struct {
	Seeds, Failures, Steps uint64
	Calls, Executed        uint64
	FirstFailure           uint64 // the lowest failing seed
	First                  *Violation
}

func (s Summary) String() string {
	return fmt.Sprintf("seeds=%d failures=%d steps=%d calls=%d executed=%d", s.Seeds, s.Failures, s.Steps, s.Calls, s.Executed)
}

// Many runs seeds [from, from+n) over workers goroutines (0: GOMAXPROCS).
func Many(from, n uint64, m peers.Mutations, workers int) Summary {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var (
		mu  sync.Mutex
		sum = Summary{Seeds: n}
		wg  sync.WaitGroup
	)
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local Summary
			for seed := from + uint64(k); seed < from+n; seed += uint64(workers) {
				r := Run(Options{Seed: seed, Mutations: m})
				local.Steps += uint64(r.Steps)
				local.Calls += r.calls
				local.Executed += r.executed
				if r.Violation != nil {
					if local.Failures == 0 || seed < local.FirstFailure {
						local.FirstFailure, local.First = seed, r.Violation
					}
					local.Failures++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			sum.Steps += local.Steps
			sum.Calls += local.Calls
			sum.Executed += local.Executed
			if local.Failures > 0 && (sum.Failures == 0 || local.FirstFailure < sum.FirstFailure) {
				sum.FirstFailure, sum.First = local.FirstFailure, local.First
			}
			sum.Failures += local.Failures
		}()
	}
	wg.Wait()
	return sum
}
