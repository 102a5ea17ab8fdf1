package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Bounds on what the watcher reads from etcd: a listing holds at most
// maxMembers keys (the rest are ignored, with an error logged) and its
// response at most maxListBytes; at most maxBadKeys keys that are not
// mailroom incarnations are remembered to be logged once each.
const (
	maxMembers   = 10000
	maxListBytes = 64 << 20
	maxBadKeys   = 1024
)

// runWatcher lists the prefix, then watches it from the listed revision
// until ctx ends. When the watch cannot resume (the revision was
// compacted while the client was disconnected, or etcd cancelled the
// watch) it lists again, which reports down every incarnation whose key
// went meanwhile.
func (p *Etcd) runWatcher(ctx context.Context, client *clientv3.Client) {
	defer close(p.watcherDone)
	errs := streakLog{log: p.log, what: "watching the members"}
	bad := map[string]bool{}
	failures := 0
	for first := true; ; first = false {
		if !first {
			p.relists.Add(1)
		}
		rev, err := p.list(ctx, client, bad)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			errs.ok()
			failures = 0
			err = p.follow(ctx, client, rev+1, bad)
			if ctx.Err() != nil {
				return
			}
		}
		failures++
		errs.fail(err)
		if !sleepCtx(ctx, backoff(p.cfg.BackoffMin, p.cfg.BackoffMax, failures)) {
			return
		}
	}
}

// list reads every key under the prefix and applies them as the whole
// membership; it returns the revision listed.
func (p *Etcd) list(ctx context.Context, client *clientv3.Client, bad map[string]bool) (int64, error) {
	resp, err := client.Get(ctx, p.cfg.Prefix, clientv3.WithPrefix(), clientv3.WithLimit(maxMembers))
	if err != nil {
		return 0, fmt.Errorf("listing %s: %w", p.cfg.Prefix, err)
	}
	if resp.More {
		p.log.Error("discovery: etcd: more keys under the prefix than a listing reads; the rest are ignored", "prefix", p.cfg.Prefix, "count", resp.Count, "read", maxMembers)
	}
	ms := make([]discovery.Member, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if m, ok := p.member(string(kv.Key), kv.Value, bad); ok {
			ms = append(ms, m)
		}
	}
	p.mu.Lock()
	evs := p.table.sync(time.Now(), ms)
	p.mu.Unlock()
	p.publish(client, evs)
	return resp.Header.Revision, nil
}

// follow watches the prefix from rev until the watch ends; it returns
// why.
func (p *Etcd) follow(ctx context.Context, client *clientv3.Client, rev int64, bad map[string]bool) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for resp := range client.Watch(wctx, p.cfg.Prefix, clientv3.WithPrefix(), clientv3.WithRev(rev)) {
		if p.beforeApply != nil {
			if p.beforeApply(ctx); ctx.Err() != nil {
				return ctx.Err()
			}
		}
		if resp.CompactRevision != 0 {
			return fmt.Errorf("the watch from revision %d cannot resume: etcd compacted its history up to %d; relisting", rev, resp.CompactRevision)
		}
		if err := resp.Err(); err != nil {
			return fmt.Errorf("the watch ended: %w; relisting", err)
		}
		var evs []discovery.Event
		now := time.Now()
		p.mu.Lock()
		for _, ev := range resp.Events {
			key := string(ev.Kv.Key)
			switch ev.Type {
			case clientv3.EventTypePut:
				if m, ok := p.member(key, ev.Kv.Value, bad); ok {
					evs = append(evs, p.table.put(now, m)...)
				}
			case clientv3.EventTypeDelete:
				if id, err := parseKey(p.cfg.Prefix, key); err == nil {
					evs = append(evs, p.table.del(now, id)...)
				}
			}
			rev = ev.Kv.ModRevision + 1
		}
		p.mu.Unlock()
		p.publish(client, evs)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.New("the watch channel closed; relisting")
}

// member reads the incarnation stored under key, logging once per key a
// key or value that is not a mailroom incarnation's.
func (p *Etcd) member(key string, value []byte, bad map[string]bool) (discovery.Member, bool) {
	id, err := parseKey(p.cfg.Prefix, key)
	var m discovery.Member
	if err == nil {
		m, err = decode(id, value)
	}
	if err != nil {
		if !bad[key] && len(bad) < maxBadKeys {
			bad[key] = true
			p.log.Warn("discovery: etcd: ignoring a key under the prefix that is not a mailroom incarnation", "key", key, "err", err)
		}
		return discovery.Member{}, false
	}
	return m, true
}

// publish queues events and declares self dead when etcd deleted self's
// key.
func (p *Etcd) publish(client *clientv3.Client, evs []discovery.Event) {
	p.mu.Lock()
	p.queue.Push(evs...)
	selfDown, lease := p.table.selfDown(), p.lease
	p.mu.Unlock()
	if selfDown {
		p.declareDead(client, lease, "etcd deleted this incarnation's key: its lease expired or was revoked")
	}
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
// Debug, and the recovery at Info. It belongs to one goroutine.
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
		s.log.Warn("discovery: etcd: error while "+s.what+"; retrying", "err", err)
		return
	}
	s.log.Debug("discovery: etcd: error while "+s.what, "err", err, "failures", s.failures)
}

func (s *streakLog) ok() {
	if s.failures > 0 {
		s.log.Info("discovery: etcd: etcd reachable again while "+s.what, "failures", s.failures, "after", time.Since(s.since).Round(time.Millisecond))
		s.failures = 0
	}
}
