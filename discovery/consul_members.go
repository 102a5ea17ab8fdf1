package discovery

import (
	"sort"
	"time"
)

// nextIndex returns the WaitIndex for the next blocking query after a
// response carrying index got, when the query was made with prev, and
// whether the response reveals a reset (Consul's state went back in time:
// the agent or the servers restarted without their data).
//
// It follows Consul's rules for blocking queries: an index that goes
// backwards is reset to 0 (the next read does not block and returns the
// current index), and an index of 0 is replaced by 1 so that a buggy
// answer cannot turn the watch into a hot loop.
func nextIndex(prev, got uint64) (next uint64, reset bool) {
	// prev == 1 after a substituted 0: a 0 again is not news.
	reset = got < prev && !(got == 0 && prev == 1)
	switch {
	case got == 0:
		return 1, reset
	case reset:
		return 0, true
	}
	return got, false
}

// instance is one service instance as a health query reports it.
type instance struct {
	member Member
	// status is the aggregated check status: passing, warning, critical,
	// maintenance, or "" when Consul reported something unknown.
	status string
}

func (i instance) alive() bool { return i.status == "passing" || i.status == "warning" }
func (i instance) dead() bool  { return i.status == "critical" || i.status == "maintenance" }

// memberTable is the watch's synchronous core: it turns successive query
// results into events. It is not safe for concurrent use; Consul guards it.
//
// Rules:
//   - A new incarnation that is alive (passing or warning) is MemberUp.
//   - A known incarnation whose Addr, PoolWorkers, Draining or Meta changed is
//     MemberUpdated.
//   - A known incarnation that is critical or in maintenance is MemberDown.
//   - A known incarnation that is absent from a clean result (one that
//     follows another result without an error or index reset in between)
//     was deregistered: MemberDown.
//   - A known incarnation absent from a dirty result (after an agent error
//     or an index reset: the agent or servers restarted and forgot) is not
//     dead yet: it gets grace to re-register. Back within grace, it stays
//     up without any event (or MemberUpdated if it changed); still absent
//     after grace, it is MemberDown.
//   - Down is final: the incarnation is tombstoned and never reported up
//     again, even if its check passes later. An incarnation first seen
//     critical is tombstoned silently. A tombstone is forgotten once the
//     incarnation has been absent from results for tombRetention: by then
//     its own provider has declared itself dead and will not re-register.
type memberTable struct {
	selfKey       string
	self          Member
	grace         time.Duration
	tombRetention time.Duration

	known    map[string]Member    // reported up, not down
	missing  map[string]time.Time // known but absent since a dirty result: deadline
	tombs    map[string]time.Time // reported down: when last seen in a result
	stopping bool                 // Stop began: events about self are dropped
}

func newMemberTable(self Member, grace, tombRetention time.Duration) *memberTable {
	return &memberTable{
		selfKey:       self.ID(),
		self:          self,
		grace:         grace,
		tombRetention: tombRetention,
		known:         map[string]Member{},
		missing:       map[string]time.Time{},
		tombs:         map[string]time.Time{},
	}
}

// apply diffs one query result against the known set.
func (t *memberTable) apply(now time.Time, insts []instance, clean bool) []Event {
	var evs []Event
	seen := make(map[string]bool, len(insts))
	for _, in := range dedupe(insts) {
		key := in.member.ID()
		seen[key] = true
		if _, ok := t.tombs[key]; ok {
			t.tombs[key] = now
			continue
		}
		old, isKnown := t.known[key]
		switch {
		case in.dead():
			evs = t.down(evs, now, key, in.member, isKnown)
		case !in.alive():
			// Unknown status: no news about this one.
		case !isKnown:
			t.known[key] = in.member
			evs = t.emit(evs, MemberUp, in.member)
		default:
			delete(t.missing, key)
			if !sameState(old, in.member) {
				t.known[key] = in.member
				evs = t.emit(evs, MemberUpdated, in.member)
			}
		}
	}
	for _, key := range sortedKeys(t.known) {
		if seen[key] {
			continue
		}
		deadline, waiting := t.missing[key]
		switch {
		case waiting && !now.Before(deadline):
			evs = t.down(evs, now, key, t.known[key], true)
		case waiting:
		case clean:
			evs = t.down(evs, now, key, t.known[key], true)
		default:
			t.missing[key] = now.Add(t.grace)
		}
	}
	for key, last := range t.tombs {
		if !seen[key] && now.Sub(last) > t.tombRetention && key != t.selfKey {
			delete(t.tombs, key)
		}
	}
	return evs
}

// selfDead tombstones self because its provider declared it dead, and
// reports it down unless that happened already.
func (t *memberTable) selfDead(now time.Time) []Event {
	if _, ok := t.tombs[t.selfKey]; ok {
		return nil
	}
	m, ok := t.known[t.selfKey]
	if !ok {
		m = t.self
	}
	return t.down(nil, now, t.selfKey, m, true)
}

// selfDown reports whether self has been reported down.
func (t *memberTable) selfDown() bool {
	_, ok := t.tombs[t.selfKey]
	return ok
}

// nextDeadline returns the earliest grace deadline, or zero.
func (t *memberTable) nextDeadline() time.Time {
	var first time.Time
	for _, d := range t.missing {
		if first.IsZero() || d.Before(first) {
			first = d
		}
	}
	return first
}

func (t *memberTable) down(evs []Event, now time.Time, key string, m Member, report bool) []Event {
	delete(t.known, key)
	delete(t.missing, key)
	t.tombs[key] = now
	if report {
		evs = t.emit(evs, MemberDown, m)
	}
	return evs
}

func (t *memberTable) emit(evs []Event, typ EventType, m Member) []Event {
	if t.stopping && m.ID() == t.selfKey {
		return evs
	}
	return append(evs, Event{Type: typ, Member: m})
}

// dedupe keeps one instance per incarnation (the worst status wins: an
// incarnation registered twice is dead if either copy is) in a stable
// order.
func dedupe(insts []instance) []instance {
	rank := func(s string) int {
		switch s {
		case "critical", "maintenance":
			return 2
		case "":
			return 1
		}
		return 0
	}
	byKey := make(map[string]int, len(insts))
	out := make([]instance, 0, len(insts))
	for _, in := range insts {
		key := in.member.ID()
		if i, ok := byKey[key]; ok {
			if rank(in.status) > rank(out[i].status) {
				out[i] = in
			}
			continue
		}
		byKey[key] = len(out)
		out = append(out, in)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].member.ID() < out[j].member.ID() })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
