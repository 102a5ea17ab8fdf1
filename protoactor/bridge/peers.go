package bridge

import (
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// peerKey names one incarnation of another node.
type peerKey struct {
	node string
	inc  uint64
}

// peer is a node incarnation this bridge has a session with, watched
// through mailroom: when mailroom reports it gone, everything pinned to
// it ends (pending futures, watches both ways).
type peer struct {
	key  peerKey
	gone atomic.Bool

	mu sync.Mutex // protects following
	// watching: local actors watching the peer's actors (told
	// AddressTerminated when the peer goes).
	watching map[watchKey]watchRec
	// watchers: the peer's actors watching local actors (unwatched when
	// the peer goes; bounded by MaxWatchesPerPeer).
	watchers map[watchKey]watchRec
}

type watchKey struct{ watcher, watchee string } // process ids

type watchRec struct{ watcher, watchee *actor.PID }

// addWatching records that local watcher watches the peer's watchee;
// false if the peer is gone.
func (p *peer) addWatching(watcher, watchee *actor.PID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone.Load() {
		return false
	}
	if p.watching == nil {
		p.watching = make(map[watchKey]watchRec)
	}
	p.watching[watchKey{watcher.Id, watchee.Id}] = watchRec{watcher, watchee}
	return true
}

func (p *peer) removeWatching(watcher, watchee string) {
	p.mu.Lock()
	delete(p.watching, watchKey{watcher, watchee})
	p.mu.Unlock()
}

// addWatcher records that the peer's watcher watches local watchee; false
// if the peer is gone or holds limit watches already.
func (p *peer) addWatcher(watcher, watchee *actor.PID, limit int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone.Load() {
		return false
	}
	k := watchKey{watcher.Id, watchee.Id}
	if _, ok := p.watchers[k]; ok {
		return true
	}
	if len(p.watchers) >= limit {
		return false
	}
	if p.watchers == nil {
		p.watchers = make(map[watchKey]watchRec)
	}
	p.watchers[k] = watchRec{watcher, watchee}
	return true
}

func (p *peer) removeWatcher(watcher, watchee string) {
	p.mu.Lock()
	delete(p.watchers, watchKey{watcher, watchee})
	p.mu.Unlock()
}

// peerTable holds the live peers. A peer that is gone is forgotten: what
// it still sends is dropped (UnknownPeer) until it says hello again.
type peerTable struct {
	mu   sync.Mutex // protects following
	live map[peerKey]*peer
}

func (t *peerTable) init() { t.live = make(map[peerKey]*peer) }

// adopt returns the live peer for key, creating it; fresh is true when it
// was created (the caller then asks mailroom to watch it).
func (t *peerTable) adopt(key peerKey) (p *peer, fresh bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.live[key]; p != nil {
		return p, false
	}
	p = &peer{key: key}
	t.live[key] = p
	return p, true
}

// get returns the live peer for key, or nil.
func (t *peerTable) get(key peerKey) *peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live[key]
}

func (t *peerTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.live)
}

// gone ends peer key: its session closes, its pending futures fail with
// reason (may have executed), local watchers of its actors get Terminated
// (AddressTerminated), and its watches of local actors are removed.
// Called on the monitor actor's goroutine (mailroom reported the
// incarnation gone) or by Stop.
func (t *peerTable) gone(b *Bridge, key peerKey, reason error) {
	t.mu.Lock()
	p := t.live[key]
	delete(t.live, key)
	t.mu.Unlock()
	if p == nil {
		return
	}
	p.gone.Store(true) // before failPeer: see pendingTable.add
	b.sessions.peerGone(p)
	p.mu.Lock()
	watching, watchers := p.watching, p.watchers
	p.watching, p.watchers = nil, nil
	p.mu.Unlock()
	failed := b.pending.failPeer(p)
	for id, target := range failed {
		err := mayHaveExecuted(newError("request", key.node, key.inc, describe(&actor.PID{Id: target}), reason))
		b.deliverFailure(actor.NewPID(b.addr, id), err)
	}
	for _, w := range watching {
		b.tellTerminated(w.watcher, w.watchee, actor.TerminatedReason_AddressTerminated)
	}
	for _, w := range watchers {
		if proc, ok := b.pas.ProcessRegistry.GetLocal(w.watchee.Id); ok {
			proc.SendSystemMessage(w.watchee, &actor.Unwatch{Watcher: w.watcher})
		}
	}
	b.log.Debug("peer gone", "node", key.node, "incarnation", key.inc, "requests_failed", len(failed), "watches_ended", len(watching))
}

// goneAll ends every peer (Stop).
func (t *peerTable) goneAll(b *Bridge, reason error) {
	t.mu.Lock()
	keys := make([]peerKey, 0, len(t.live))
	for k := range t.live {
		keys = append(keys, k)
	}
	t.mu.Unlock()
	for _, k := range keys {
		t.gone(b, k, reason)
	}
}

// tellTerminated delivers Terminated{who, why} to the local watcher.
func (b *Bridge) tellTerminated(watcher, who *actor.PID, why actor.TerminatedReason) {
	if proc, ok := b.pas.ProcessRegistry.GetLocal(watcher.Id); ok {
		proc.SendSystemMessage(watcher, &actor.Terminated{Who: who, Why: why})
	}
}
