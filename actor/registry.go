package actor

import (
	"sync"
)

const tableShards = 64

// procTable maps process IDs to live processes. Sharded so spawns and
// lookups from many goroutines do not meet on one lock.
type procTable struct {
	shards [tableShards]procShard
}

type procShard struct {
	mu sync.RWMutex // protects m
	m  map[uint64]*process
	_  [40]byte // keep shards on separate cache lines
}

func (t *procTable) shard(id uint64) *procShard { return &t.shards[id%tableShards] }

func (t *procTable) get(id uint64) *process {
	s := t.shard(id)
	s.mu.RLock()
	p := s.m[id]
	s.mu.RUnlock()
	return p
}

func (t *procTable) put(p *process) {
	s := t.shard(p.pid.ID)
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[uint64]*process)
	}
	s.m[p.pid.ID] = p
	s.mu.Unlock()
}

func (t *procTable) remove(id uint64) {
	s := t.shard(id)
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// snapshot returns the live processes keep selects.
func (t *procTable) snapshot(keep func(*process) bool) []*process {
	var out []*process
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.RLock()
		for _, p := range s.m {
			if keep(p) {
				out = append(out, p)
			}
		}
		s.mu.RUnlock()
	}
	return out
}

func (t *procTable) count() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

// nameTable maps registered names to processes.
type nameTable struct {
	mu sync.RWMutex // protects m
	m  map[string]*process
}

func (t *nameTable) claim(name string, p *process) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, taken := t.m[name]; taken {
		return false
	}
	if t.m == nil {
		t.m = make(map[string]*process)
	}
	t.m[name] = p
	return true
}

func (t *nameTable) get(name string) *process {
	t.mu.RLock()
	p := t.m[name]
	t.mu.RUnlock()
	return p
}

// release removes name if it still maps to p.
func (t *nameTable) release(name string, p *process) {
	t.mu.Lock()
	if t.m[name] == p {
		delete(t.m, name)
	}
	t.mu.Unlock()
}
