package discovery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNextIndex(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prev, got uint64
		next      uint64
		reset     bool
	}{
		{"first read", 0, 17, 17, false},
		{"normal progress", 17, 42, 42, false},
		{"timeout, no change", 42, 42, 42, false},
		{"backwards: state lost", 42, 5, 0, true},
		{"backwards by one", 42, 41, 0, true},
		{"zero on first read", 0, 0, 1, false},
		{"zero after progress: state lost", 42, 0, 1, true},
		{"zero again after a substituted zero", 1, 0, 1, false},
		{"after a reset read", 0, 5, 5, false},
		{"after a substituted zero", 1, 9, 9, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, reset := nextIndex(tc.prev, tc.got)
			require.Equal(t, tc.next, next, "next")
			require.Equal(t, tc.reset, reset, "reset")
		})
	}
}

func mem(node string, inc uint64) Member {
	return Member{Node: node, Incarnation: inc, Addr: "127.0.0.1:7000", PoolWorkers: 4}
}

func pass(m Member) instance { return instance{member: m, status: "passing"} }
func crit(m Member) instance { return instance{member: m, status: "critical"} }

func TestMemberTableUpUpdatedDown(t *testing.T) {
	self, a, b := mem("self", 1), mem("a", 2), mem("b", 3)
	tb := newMemberTable(self, 4*time.Second, time.Minute)
	now := time.Unix(1000, 0)

	evs := tb.apply(now, []instance{pass(a), pass(self), crit(b)}, true)
	require.Equal(t, []Event{{MemberUp, a}, {MemberUp, self}}, evs, "b first seen critical is tombstoned silently")

	require.Empty(t, tb.apply(now, []instance{pass(a), pass(self), crit(b)}, true), "a return is not a change")

	a2 := a
	a2.Draining = true
	a2.Meta = map[string]string{"v": "2"}
	require.Equal(t, []Event{{MemberUpdated, a2}}, tb.apply(now, []instance{pass(a2), pass(self)}, true))
	require.Empty(t, tb.apply(now, []instance{{member: a2, status: "warning"}, pass(self)}, true), "warning is alive")

	require.Equal(t, []Event{{MemberDown, a2}}, tb.apply(now, []instance{crit(a2), pass(self)}, true))
	require.Empty(t, tb.apply(now, []instance{pass(a2), pass(self), pass(b)}, true), "tombstoned incarnations never come back")

	a3 := mem("a", 4) // a restarted: new incarnation
	require.Equal(t, []Event{{MemberUp, a3}}, tb.apply(now, []instance{pass(a3), pass(self)}, true))
	require.Equal(t, []Event{{MemberDown, a3}}, tb.apply(now, []instance{pass(self)}, true), "deregistered in a clean watch")
}

func TestMemberTableMaintenanceAndUnknown(t *testing.T) {
	self, a := mem("self", 1), mem("a", 2)
	tb := newMemberTable(self, 4*time.Second, time.Minute)
	now := time.Unix(1000, 0)
	require.Len(t, tb.apply(now, []instance{pass(a)}, true), 1)
	require.Empty(t, tb.apply(now, []instance{{member: a, status: ""}}, true), "unknown status: no news")
	require.Equal(t, []Event{{MemberDown, a}}, tb.apply(now, []instance{{member: a, status: "maintenance"}}, true))
}

func TestMemberTableDuplicateWorstWins(t *testing.T) {
	a := mem("a", 2)
	tb := newMemberTable(mem("self", 1), time.Second, time.Minute)
	require.Empty(t, tb.apply(time.Unix(1, 0), []instance{pass(a), crit(a)}, true))
	require.Empty(t, tb.apply(time.Unix(2, 0), []instance{pass(a)}, true))
}

func TestMemberTableResetGrace(t *testing.T) {
	self, a, b := mem("self", 1), mem("a", 2), mem("b", 3)
	grace := 4 * time.Second
	tb := newMemberTable(self, grace, time.Minute)
	t0 := time.Unix(1000, 0)
	require.Len(t, tb.apply(t0, []instance{pass(a), pass(b), pass(self)}, true), 3)

	// The agent restarted empty: a dirty result without anyone.
	require.Empty(t, tb.apply(t0.Add(time.Second), nil, false), "vanishing after a reset is not a death")
	require.Equal(t, t0.Add(time.Second+grace), tb.nextDeadline())

	// Self and a re-register; the clean results that follow do not
	// report b yet: it is within grace.
	require.Empty(t, tb.apply(t0.Add(2*time.Second), []instance{pass(self)}, true))
	a2 := a
	a2.Draining = true
	require.Equal(t, []Event{{MemberUpdated, a2}}, tb.apply(t0.Add(3*time.Second), []instance{pass(self), pass(a2)}, true),
		"back within grace: still up, changes reported")

	// b never comes back: down when grace ends.
	require.Empty(t, tb.apply(t0.Add(5*time.Second-time.Millisecond), []instance{pass(self), pass(a2)}, true))
	require.Equal(t, []Event{{MemberDown, b}}, tb.apply(t0.Add(5*time.Second), []instance{pass(self), pass(a2)}, true))
	require.True(t, tb.nextDeadline().IsZero())
	require.Empty(t, tb.apply(t0.Add(6*time.Second), []instance{pass(self), pass(a2), pass(b)}, true), "b is tombstoned")

	// Critical within grace is a death.
	require.Empty(t, tb.apply(t0.Add(7*time.Second), []instance{pass(self)}, false))
	require.Equal(t, []Event{{MemberDown, a2}}, tb.apply(t0.Add(8*time.Second), []instance{pass(self), crit(a2)}, true))
}

func TestMemberTableSelf(t *testing.T) {
	self := mem("self", 1)
	tb := newMemberTable(self, time.Second, time.Minute)
	now := time.Unix(1000, 0)
	require.Equal(t, []Event{{MemberDown, self}}, tb.selfDead(now), "declared dead before the watch saw self")
	require.True(t, tb.selfDown())
	require.Empty(t, tb.selfDead(now), "once")
	require.Empty(t, tb.apply(now, []instance{pass(self)}, true), "self never comes back")

	tb = newMemberTable(self, time.Second, time.Minute)
	require.Equal(t, []Event{{MemberUp, self}}, tb.apply(now, []instance{pass(self)}, true))
	require.Equal(t, []Event{{MemberDown, self}}, tb.apply(now, []instance{crit(self)}, true))
	require.True(t, tb.selfDown())

	tb = newMemberTable(self, time.Second, time.Minute)
	require.Len(t, tb.apply(now, []instance{pass(self)}, true), 1)
	tb.stopping = true
	require.Empty(t, tb.apply(now, nil, true), "no events about self once Stop began")
}

func TestMemberTableTombstonePruning(t *testing.T) {
	self, a := mem("self", 1), mem("a", 2)
	tb := newMemberTable(self, time.Second, time.Minute)
	t0 := time.Unix(1000, 0)
	tb.apply(t0, []instance{pass(a)}, true)
	tb.apply(t0, []instance{crit(a)}, true)
	tb.apply(t0.Add(50*time.Second), []instance{crit(a)}, true) // still listed: kept fresh
	tb.apply(t0.Add(100*time.Second), nil, true)
	require.Contains(t, tb.tombs, a.ID(), "absent for less than the retention")
	tb.apply(t0.Add(111*time.Second), nil, true)
	require.NotContains(t, tb.tombs, a.ID(), "absent for longer than the retention")
}
