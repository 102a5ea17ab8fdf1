package router

import (
	"context"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
)

// scatter asks every member of set and returns the first answer. The
// others are cancelled once it came (their ctx ends) and end on their
// own goroutines, which count how they ended (Stats.ScatterLate,
// ScatterFailed); Close waits for them. When every routee fails, the
// error is a *ScatterError of all their errors with the combined
// outcome (errors.go).
func (r *Router) scatter(ctx context.Context, from actor.Caller, set []member, msg any) (any, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := &gather{results: make(chan result, len(set))}
	r.scatters.Add(len(set))
	for i := range set {
		m := &set[i]
		go func() {
			defer r.scatters.Done()
			v, err := m.request(ctx, from, msg)
			g.deliver(r, result{v: v, err: err})
		}()
	}
	errs := make([]error, 0, len(set))
	for range set {
		res := <-g.results
		if res.err == nil {
			g.decide(r)
			return res.v, nil
		}
		errs = append(errs, res.err)
	}
	return nil, scatterFailed(errs)
}

type result struct {
	v   any
	err error
}

// gather is one scatter-gather's results. Results are handed over under
// mu until the first answer decides; from then on each request counts
// its own end, so none goes uncounted.
type gather struct {
	results chan result // room for every routee's: deliver never blocks

	mu      sync.Mutex // protects following
	decided bool
}

func (g *gather) deliver(r *Router, res result) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.decided {
		r.countLoser(res.err)
		return
	}
	g.results <- res
}

// decide marks the first answer taken and counts the results already
// handed over but not read.
func (g *gather) decide(r *Router) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.decided = true
	for {
		select {
		case res := <-g.results:
			r.countLoser(res.err)
		default:
			return
		}
	}
}

func (r *Router) countLoser(err error) {
	if err == nil {
		r.stats.scatterLate.Add(1)
		return
	}
	r.stats.scatterFails[actor.Outcome(err)].Add(1)
}
