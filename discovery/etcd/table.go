package etcd

import (
	"sort"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
)

// table is the watch's synchronous core: it turns what etcd reports (a
// full listing, or one put or delete from the watch) into events. It is
// not safe for concurrent use; Etcd guards it.
//
// Rules:
//   - A key put for an incarnation not known yet is MemberUp.
//   - A key put again with another Addr, PoolWorkers, Draining or Meta
//     is MemberUpdated.
//   - A key deleted (its lease expired or was revoked) is MemberDown.
//   - A known incarnation absent from a full listing is MemberDown: its
//     key was deleted while the watch was not following (a compaction
//     or a disconnect made the provider relist). A key only goes with
//     its lease, and a lease never comes back, so no grace is due.
//   - Down is final: the incarnation is tombstoned and never reported up
//     again, even if someone puts its key again. A tombstone is forgotten
//     once the key has been absent for tombRetention.
type table struct {
	selfID        string
	tombRetention time.Duration

	known    map[string]discovery.Member // by Member.ID: reported up, not down
	tombs    map[string]time.Time        // reported down: when last seen
	stopping bool                        // Stop began: events about self are dropped
}

func newTable(self discovery.Member, tombRetention time.Duration) *table {
	return &table{
		selfID:        self.ID(),
		tombRetention: tombRetention,
		known:         map[string]discovery.Member{},
		tombs:         map[string]time.Time{},
	}
}

// put handles a key written for m.
func (t *table) put(now time.Time, m discovery.Member) []discovery.Event {
	id := m.ID()
	if _, ok := t.tombs[id]; ok {
		t.tombs[id] = now
		return nil
	}
	old, ok := t.known[id]
	switch {
	case !ok:
		t.known[id] = m
		return t.emit(nil, discovery.MemberUp, m)
	case !sameState(old, m):
		t.known[id] = m
		return t.emit(nil, discovery.MemberUpdated, m)
	}
	return nil
}

// del handles the key of the incarnation id deleted.
func (t *table) del(now time.Time, id string) []discovery.Event {
	m, ok := t.known[id]
	if !ok {
		return nil
	}
	return t.down(nil, now, id, m)
}

// sync handles a full listing.
func (t *table) sync(now time.Time, ms []discovery.Member) []discovery.Event {
	var evs []discovery.Event
	seen := make(map[string]bool, len(ms))
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID() < ms[j].ID() })
	for _, m := range ms {
		seen[m.ID()] = true
		evs = append(evs, t.put(now, m)...)
	}
	ids := make([]string, 0, len(t.known))
	for id := range t.known {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		evs = t.down(evs, now, id, t.known[id])
	}
	for id, last := range t.tombs {
		if !seen[id] && now.Sub(last) > t.tombRetention && id != t.selfID {
			delete(t.tombs, id)
		}
	}
	return evs
}

// selfDead tombstones self because its provider declared it dead, and
// reports it down unless that happened already.
func (t *table) selfDead(now time.Time, self discovery.Member) []discovery.Event {
	if _, ok := t.tombs[t.selfID]; ok {
		return nil
	}
	if m, ok := t.known[t.selfID]; ok {
		self = m
	}
	return t.down(nil, now, t.selfID, self)
}

// selfDown reports whether self has been reported down.
func (t *table) selfDown() bool {
	_, ok := t.tombs[t.selfID]
	return ok
}

func (t *table) down(evs []discovery.Event, now time.Time, id string, m discovery.Member) []discovery.Event {
	delete(t.known, id)
	t.tombs[id] = now
	return t.emit(evs, discovery.MemberDown, m)
}

func (t *table) emit(evs []discovery.Event, typ discovery.EventType, m discovery.Member) []discovery.Event {
	if t.stopping && m.ID() == t.selfID {
		return evs
	}
	return append(evs, discovery.Event{Type: typ, Member: m})
}
