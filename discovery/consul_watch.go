package discovery

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/consul/api"
)

// runWatcher follows the service with blocking health queries until ctx
// is cancelled, feeding each result to the member table.
func (p *Consul) runWatcher(ctx context.Context) {
	defer close(p.watcherDone)
	var (
		index    uint64
		dirty    bool // an error or reset since the last applied result
		failures int
		last     time.Time
		errs     = streakLog{log: p.log, what: "watching the service"}
	)
	for {
		if wait := p.cfg.MinQueryInterval - time.Since(last); wait > 0 && !sleepCtx(ctx, wait) {
			return
		}
		last = time.Now()
		opts := &api.QueryOptions{WaitIndex: index, WaitTime: p.waitTime(last)}
		entries, meta, err := p.client.Health().Service(p.cfg.Service, "", false, opts.WithContext(ctx))
		if ctx.Err() != nil {
			return
		}
		if p.beforeApply != nil {
			if p.beforeApply(ctx); ctx.Err() != nil {
				return
			}
		}
		if err != nil {
			// The agent may come back restarted, with a lower index: read
			// afresh rather than block on an index it may never reach.
			index = 0
			dirty = true
			failures++
			errs.fail(err)
			if !sleepCtx(ctx, backoff(p.cfg.BackoffMin, p.cfg.BackoffMax, failures)) {
				return
			}
			continue
		}
		failures = 0
		errs.ok()
		next, reset := nextIndex(index, meta.LastIndex)
		if reset {
			p.log.Warn("discovery: consul: the service index went backwards: Consul lost its state (restarted?); absent members get grace to re-register",
				"from", index, "to", meta.LastIndex, "grace", p.grace())
			dirty = true
		}
		index = next
		p.applyResult(p.parseEntries(entries), !dirty)
		dirty = false
	}
}

// waitTime is the blocking query's wait: WaitTime, cut short so the
// watch wakes when the first grace deadline passes.
func (p *Consul) waitTime(now time.Time) time.Duration {
	p.mu.Lock()
	deadline := p.table.nextDeadline()
	p.mu.Unlock()
	wt := p.cfg.WaitTime
	if !deadline.IsZero() {
		// Consul rounds the wait to milliseconds and adds up to 1/16 jitter.
		wt = min(wt, max(deadline.Sub(now)+time.Millisecond, 10*time.Millisecond))
	}
	return wt
}

// applyResult diffs a result into events, queues them, and declares self
// dead when the cluster reported it down.
func (p *Consul) applyResult(insts []instance, clean bool) {
	p.mu.Lock()
	evs := p.table.apply(time.Now(), insts, clean)
	p.queue.Push(evs...)
	selfDown := p.table.selfDown()
	p.mu.Unlock()
	if selfDown {
		p.declareDead("the cluster reports this incarnation down (check critical or deregistered)")
	}
}

// parseEntries turns health entries into instances, skipping (and
// logging once each) instances that are not mailroom incarnations.
func (p *Consul) parseEntries(entries []*api.ServiceEntry) []instance {
	insts := make([]instance, 0, len(entries))
	for _, e := range entries {
		m, err := parseMember(e.Service)
		if err != nil {
			id := ""
			if e.Service != nil {
				id = e.Service.ID
			}
			if !p.badIDs[id] {
				p.badIDs[id] = true
				p.log.Warn("discovery: consul: ignoring an instance of the service that is not a mailroom incarnation", "id", id, "err", err)
			}
			continue
		}
		insts = append(insts, instance{member: m, status: e.Checks.AggregatedStatus()})
	}
	return insts
}

// backoff is the wait after the n-th consecutive failure: min doubled
// n-1 times, capped at max, with jitter down to half.
func backoff(minD, maxD time.Duration, n int) time.Duration {
	d := minD
	for i := 1; i < n && d < maxD; i++ {
		d *= 2
	}
	d = min(d, maxD)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// sleepCtx waits for d or until ctx is done; it reports whether the wait
// completed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// streakLog logs the first failure of a streak at Warn, the rest at
// Debug, and the recovery at Info, so an agent that is down for minutes
// does not flood the log. It belongs to one goroutine.
type streakLog struct {
	log      *slog.Logger
	what     string
	failures int
	since    time.Time
}

func (s *streakLog) fail(err error) {
	s.failures++
	if s.failures == 1 {
		s.since = time.Now()
		s.log.Warn("discovery: consul: agent error while "+s.what+"; retrying", "err", err)
		return
	}
	s.log.Debug("discovery: consul: agent error while "+s.what, "err", err, "failures", s.failures)
}

func (s *streakLog) ok() {
	if s.failures > 0 {
		s.log.Info("discovery: consul: agent reachable again while "+s.what, "failures", s.failures, "after", time.Since(s.since).Round(time.Millisecond))
		s.failures = 0
	}
}
