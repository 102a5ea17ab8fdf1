package discovery

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"
)

// dnsLoop is the resolver goroutine's state: the last view and the
// failure streak. Only that goroutine (and Start, before it runs) uses it.
type dnsLoop struct {
	d    *DNS
	self string
	log  *slog.Logger

	view     map[string]Member
	failures int       // consecutive failed resolutions
	since    time.Time // when the streak began
	lastErr  string    // the key (dnsErrKey) of the error last logged in this streak
	// What the last resolution left out, logged when it changes.
	lastSkipped, lastDropped int
}

// run resolves every Interval (after failures, Interval doubling up to
// dnsBackoffFactor Intervals, jittered down to half) until ctx ends.
func (l *dnsLoop) run(ctx context.Context) {
	interval := l.d.cfg.Interval
	for {
		wait := interval
		if l.failures > 0 {
			for i := 1; i < l.failures && wait < dnsBackoffFactor*interval; i++ {
				wait *= 2 // 1, 2, 4, 8 Intervals
			}
			wait = min(wait, dnsBackoffFactor*interval)
			wait = wait/2 + rand.N(wait/2+1)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		l.round(ctx)
	}
}

// round resolves once and queues the events between the last view and
// what it found; a failure keeps the last view.
func (l *dnsLoop) round(ctx context.Context) {
	d := l.d
	rctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	r, err := resolveDNS(rctx, d.res, d.cfg, l.self)
	cancel()
	if ctx.Err() != nil {
		return // stopping: the answer (or the failure) says nothing
	}
	if err != nil {
		d.errs.Add(1)
		l.failures++
		if l.failures == 1 {
			l.since = time.Now()
		}
		if key := dnsErrKey(err); key != l.lastErr {
			l.lastErr = key
			l.log.Warn("discovery: dns: resolution failed; keeping the last view", "name", d.cfg.Name, "err", err, "failures", l.failures, "members", len(l.view))
		}
		return
	}
	d.resolutions.Add(1)
	if l.failures > 0 {
		l.log.Info("discovery: dns: resolving again", "name", d.cfg.Name, "failures", l.failures, "after", time.Since(l.since).Round(time.Millisecond))
		l.failures, l.lastErr = 0, ""
	}
	d.skipped.Add(uint64(r.skipped))
	d.dropped.Add(uint64(r.dropped))
	if r.skipped != l.lastSkipped || r.dropped != l.lastDropped {
		l.lastSkipped, l.lastDropped = r.skipped, r.dropped
		if r.skipped > 0 || r.dropped > 0 {
			l.log.Warn("discovery: dns: targets left out (skipped: no valid or a duplicate node name, or no address; dropped: beyond MaxTargets)", "name", d.cfg.Name, "skipped", r.skipped, "dropped", r.dropped, "max", d.cfg.MaxTargets)
		}
	}
	next, evs := diffDNS(l.view, r.targets)
	l.view = next
	d.targets.Store(int64(len(next)))
	d.q.Push(evs...)
}
