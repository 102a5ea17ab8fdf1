package remote

import (
	"context"
	"sync"
)

// runningCalls indexes the calls one peer incarnation runs here, by the
// caller's id, so that its cancels find them and its end cancels them
// all. The link's reader adds each call and the call's worker removes
// it: the index is sharded so that the two rarely wait on one lock.
type runningCalls struct {
	shards [runShards]runShard
}

const runShards = 8

type runShard struct {
	mu     sync.Mutex // protects following
	m      map[uint64]*inboundCall
	closed bool // the incarnation is gone: nothing more is tracked
	_      [40]byte
}

func (r *runningCalls) shard(id uint64) *runShard { return &r.shards[mix(id)%runShards] }

// track registers c; false when the incarnation is gone.
func (r *runningCalls) track(c *inboundCall) bool {
	s := r.shard(c.id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.m == nil {
		s.m = make(map[uint64]*inboundCall)
	}
	s.m[c.id] = c
	return true
}

// untrack removes c (if a later call has not reused its id).
func (r *runningCalls) untrack(c *inboundCall) {
	s := r.shard(c.id)
	s.mu.Lock()
	if s.m[c.id] == c {
		delete(s.m, c.id)
	}
	s.mu.Unlock()
}

// cancel cancels the call with id, if it runs.
func (r *runningCalls) cancel(id uint64) {
	s := r.shard(id)
	s.mu.Lock()
	c := s.m[id]
	s.mu.Unlock()
	if c != nil {
		c.ctx.cancel(context.Canceled)
	}
}

// cancelAll cancels every call running now; with close, nothing more is
// tracked afterwards (the incarnation is gone).
func (r *runningCalls) cancelAll(close bool) {
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		m := s.m
		s.m = nil
		if close {
			s.closed = true
		}
		s.mu.Unlock()
		for _, c := range m {
			c.ctx.cancel(context.Canceled)
		}
	}
}
