package bridge

import "sync"

// pendingTable holds the local futures waiting on other nodes, each
// pinned to the peer incarnation its request was sent to, so that the
// loss of that incarnation fails exactly those futures at once.
//
// An entry leaves when the reply comes in (take), when the bridge fails
// the request (take), or when the peer is gone (failPeer). A future that
// ended on its own (protoactor's timeout) is not told to the bridge: such
// entries are swept when a shard has doubled since its last sweep, so the
// table stays within twice the futures really waiting.
type pendingTable struct {
	shards [pendingShards]pendingShard
}

const pendingShards = 16

// pendingEntry is one waiting future: the peer incarnation its request
// went to and the target's process id (for the error text).
type pendingEntry struct {
	peer   *peer
	target string
}

type pendingShard struct {
	mu sync.Mutex // protects following
	m  map[string]pendingEntry
	// sweepAt is the size at which ended futures are next swept out.
	sweepAt int
}

func (t *pendingTable) init() {
	for i := range t.shards {
		t.shards[i].m = make(map[string]pendingEntry)
		t.shards[i].sweepAt = minSweep
	}
}

const minSweep = 1024

func (t *pendingTable) shard(id string) *pendingShard {
	return &t.shards[hashString(id)%pendingShards]
}

// add pins future id to p. False if p is already gone: the caller fails
// the request itself. alive reports whether a future still waits (for the
// sweep).
func (t *pendingTable) add(id, target string, p *peer, alive func(id string) bool) bool {
	s := t.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	// Checked under the shard lock: failPeer marks the peer gone before it
	// takes each shard's lock, so either it finds this entry or we see it
	// gone here.
	if p.gone.Load() {
		return false
	}
	if len(s.m) >= s.sweepAt {
		for k := range s.m {
			if !alive(k) {
				delete(s.m, k)
			}
		}
		s.sweepAt = max(minSweep, 2*len(s.m))
	}
	s.m[id] = pendingEntry{peer: p, target: target}
	return true
}

// take removes future id; false if it was not pending (already answered
// or failed, or never sent through the bridge).
func (t *pendingTable) take(id string) bool {
	s := t.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[id]; !ok {
		return false
	}
	delete(s.m, id)
	return true
}

// failPeer removes every future pinned to p and returns them, future id
// to target id. p.gone must be set first.
func (t *pendingTable) failPeer(p *peer) map[string]string {
	out := make(map[string]string)
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for id, e := range s.m {
			if e.peer == p {
				out[id] = e.target
				delete(s.m, id)
			}
		}
		s.mu.Unlock()
	}
	return out
}

// hashString is FNV-1a, without the allocation of hash/fnv.
func hashString(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// count is the number of entries (ended futures not yet swept included).
func (t *pendingTable) count() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
