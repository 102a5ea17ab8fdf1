package discovery

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/mailroom-go/mailroom/internal/consultest"
	"github.com/stretchr/testify/require"
)

// These tests run against a real agent: run them with `make test` or
// scripts/consul.sh run -- go test ./discovery/...

// TestConsulDiscover: two nodes see each other up with the right
// incarnation, address, pool size and meta; Update is MemberUpdated; Stop
// is MemberDown at once, and the stopped node never registers again, even
// with Updates racing Stop.
func TestConsulDiscover(t *testing.T) {
	addr := consultest.Addr(t)
	svc := testService()
	a := newNode(t, addr, svc, "a")
	b := newNode(t, addr, svc, "b")

	for _, pair := range [][2]*node{{a, b}, {b, a}, {a, a}, {b, b}} {
		e, _ := pair[0].rec.wait(t, 5*time.Second, MemberUp, pair[1].self)
		require.Equal(t, pair[1].self, e.Member, "%s sees %s", pair[0].name, pair[1].name)
	}

	drain := b.self
	drain.Draining = true
	drain.Meta = map[string]string{"services": "b-svc", "version": "2"}
	require.NoError(t, b.p.Update(context.Background(), drain))
	e, _ := a.rec.wait(t, 5*time.Second, MemberUpdated, b.self)
	require.Equal(t, drain, e.Member)

	// Updates racing Stop must not re-register b (protoactor-go #377).
	raced := make(chan error, 1)
	go func() {
		for {
			if err := b.p.Update(context.Background(), drain); errors.Is(err, ErrStopped) {
				raced <- nil
				return
			} else if err != nil {
				raced <- err
				return
			}
		}
	}()
	stopAt := time.Now()
	b.stop(t)
	require.NoError(t, <-raced)
	_, downAt := a.rec.wait(t, 5*time.Second, MemberDown, b.self)
	t.Logf("detection: Stop (deregistration) -> MemberDown on the other node in %v", downAt.Sub(stopAt).Round(time.Millisecond))

	// The one bounded wait that is the behaviour under test: b stays
	// absent from the agent and the catalog for several refresh periods.
	client := consultest.Client(t, addr)
	id := instanceID(svc, b.self)
	for end := time.Now().Add(4 * testRefresh); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		svcs, err := client.Agent().Services()
		require.NoError(t, err)
		require.NotContains(t, svcs, id, "re-registered after Stop")
		entries, _, err := client.Catalog().Service(svc, "", nil)
		require.NoError(t, err)
		for _, e := range entries {
			require.NotEqual(t, id, e.ServiceID, "back in the catalog after Stop")
		}
	}
	require.Equal(t, 1, a.rec.count(MemberUp, b.self))
	require.Zero(t, a.rec.count(MemberDown, a.self), "a is fine")
	require.Zero(t, b.rec.count(MemberDown, b.self), "no self events once Stop began")
}

// TestConsulFrozenNode: a node whose TTL updater stops (as if frozen) is
// reported down by the other within TTL + 1s; it reports itself down,
// stops refreshing (its check stays critical) and never comes back up.
func TestConsulFrozenNode(t *testing.T) {
	addr := consultest.Addr(t)
	svc := testService()
	var freeze pauser
	a := newNode(t, addr, svc, "a")
	b := newNode(t, addr, svc, "b", func(p *Consul) { p.beforeTick = freeze.hook })
	a.rec.wait(t, 5*time.Second, MemberUp, b.self)
	b.rec.wait(t, 5*time.Second, MemberUp, b.self)

	frozenAt := time.Now()
	freeze.pause()
	_, downAt := a.rec.wait(t, testTTL+time.Second+testRefresh, MemberDown, b.self)
	detect := downAt.Sub(frozenAt)
	t.Logf("detection: TTL updater frozen -> MemberDown on the other node in %v (TTL %v, refresh %v)", detect.Round(time.Millisecond), testTTL, testRefresh)
	require.Less(t, detect, testTTL+time.Second)

	freeze.unpause()
	e, _ := b.rec.wait(t, 5*time.Second, MemberDown, b.self)
	require.Equal(t, b.self, e.Member)
	dead, cause := b.p.Dead()
	require.True(t, dead)
	t.Logf("self declared dead: %s", cause)
	require.ErrorIs(t, b.p.Update(context.Background(), b.self), ErrDeclaredDead)

	// b does not flip its check back to passing: it stays critical, and a
	// never sees it up again.
	client := consultest.Client(t, addr)
	id := checkID(instanceID(svc, b.self))
	for end := time.Now().Add(4 * testRefresh); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		checks, err := client.Agent().Checks()
		require.NoError(t, err)
		require.Contains(t, checks, id)
		require.Equal(t, api.HealthCritical, checks[id].Status)
	}
	require.Equal(t, 1, a.rec.count(MemberUp, b.self))
	require.Equal(t, 1, a.rec.count(MemberDown, b.self))
	require.Equal(t, 1, b.rec.count(MemberDown, b.self))
	require.Zero(t, b.rec.count(MemberDown, a.self))
}

// TestConsulCrashAndRestart: a killed node (no deregistration) is reported
// down once its TTL expires; restarted under the same name it is a new
// incarnation, up while the old one is down.
func TestConsulCrashAndRestart(t *testing.T) {
	addr := consultest.Addr(t)
	svc := testService()
	a := newNode(t, addr, svc, "a")
	b1 := newNode(t, addr, svc, "b")
	a.rec.wait(t, 5*time.Second, MemberUp, b1.self)

	killedAt := time.Now()
	b1.crash(t)
	b2 := newNode(t, addr, svc, "b")
	require.NotEqual(t, b1.self.Incarnation, b2.self.Incarnation)
	e, _ := a.rec.wait(t, 5*time.Second, MemberUp, b2.self)
	require.Equal(t, b2.self, e.Member)
	_, downAt := a.rec.wait(t, testTTL+time.Second+testRefresh, MemberDown, b1.self)
	t.Logf("detection: kill -> MemberDown on the other node in %v (TTL %v, refresh %v)", downAt.Sub(killedAt).Round(time.Millisecond), testTTL, testRefresh)
	require.Zero(t, a.rec.count(MemberDown, b2.self))
	b2.rec.wait(t, 5*time.Second, MemberUp, a.self)
}

// TestConsulAgentRestart: the agent restarts empty (dev mode). Both nodes
// re-register with their incarnations; nobody is reported down, and the
// watch carries on (an Update afterwards is seen).
func TestConsulAgentRestart(t *testing.T) {
	agent := consultest.StartAgent(t)
	svc := testService()
	a := newNode(t, agent.Addr(), svc, "a")
	b := newNode(t, agent.Addr(), svc, "b")
	a.rec.wait(t, 5*time.Second, MemberUp, b.self)
	b.rec.wait(t, 5*time.Second, MemberUp, a.self)

	restartAt := time.Now()
	agent.Restart()
	client := consultest.Client(t, agent.Addr())
	ids := []string{instanceID(svc, a.self), instanceID(svc, b.self)}
	require.Eventually(t, func() bool {
		entries, _, err := client.Health().Service(svc, "", true, nil)
		if err != nil {
			return false
		}
		have := map[string]bool{}
		for _, e := range entries {
			have[e.Service.ID] = true
		}
		return have[ids[0]] && have[ids[1]]
	}, 15*time.Second, 50*time.Millisecond, "both nodes re-register, passing")
	t.Logf("agent restart: both nodes re-registered %v after the restart began", time.Since(restartAt).Round(time.Millisecond))

	drain := b.self
	drain.Draining = true
	require.NoError(t, b.p.Update(context.Background(), drain))
	a.rec.wait(t, 10*time.Second, MemberUpdated, b.self, func(m Member) bool { return m.Draining })
	for _, n := range []*node{a, b} {
		for _, e := range n.rec.events() {
			require.NotEqual(t, MemberDown, e.Type, "%s got %v", n.name, e)
		}
		dead, cause := n.p.Dead()
		require.False(t, dead, cause)
	}
}

// TestConsulAgentRestartLosesDeadNode: a node that died while the agent
// was away does not come back; it is reported down when its grace ends.
func TestConsulAgentRestartLosesDeadNode(t *testing.T) {
	agent := consultest.StartAgent(t)
	svc := testService()
	a := newNode(t, agent.Addr(), svc, "a")
	b := newNode(t, agent.Addr(), svc, "b")
	a.rec.wait(t, 5*time.Second, MemberUp, b.self)

	agent.Stop()
	b.crash(t)
	agent.Start()
	back := time.Now()
	_, downAt := a.rec.wait(t, 2*testTTL+5*time.Second, MemberDown, b.self)
	t.Logf("agent restart: the dead node is reported down %v after the agent came back (grace %v)", downAt.Sub(back).Round(time.Millisecond), a.p.grace())
	require.Zero(t, a.rec.count(MemberDown, a.self))
	dead, _ := a.p.Dead()
	require.False(t, dead)
}

// TestConsulFrozenProcess: the whole node freezes (updater and watcher)
// past its TTL. On thaw the updater runs first, sees that it did not run
// for longer than the TTL and declares self dead without refreshing: the
// check is never flipped back to passing.
func TestConsulFrozenProcess(t *testing.T) {
	addr := consultest.Addr(t)
	svc := testService()
	var frozenUpd, frozenWatch pauser
	a := newNode(t, addr, svc, "a")
	b := newNode(t, addr, svc, "b", func(p *Consul) {
		p.beforeTick = frozenUpd.hook
		p.beforeApply = frozenWatch.hook
	})
	a.rec.wait(t, 5*time.Second, MemberUp, b.self)
	b.rec.wait(t, 5*time.Second, MemberUp, b.self)

	frozenAt := time.Now()
	frozenWatch.pause()
	frozenUpd.pause()
	_, downAt := a.rec.wait(t, testTTL+time.Second+testRefresh, MemberDown, b.self)
	t.Logf("detection: process frozen -> MemberDown on the other node in %v (TTL %v, refresh %v)", downAt.Sub(frozenAt).Round(time.Millisecond), testTTL, testRefresh)

	// The freeze must outlast the TTL as the updater measures it (from its
	// last attempt, which ended before frozenAt): its length is the input
	// under test, not a synchronisation.
	time.Sleep(time.Until(frozenAt.Add(testTTL + testRefresh)))
	frozenUpd.unpause()
	b.rec.wait(t, 5*time.Second, MemberDown, b.self)
	dead, cause := b.p.Dead()
	require.True(t, dead)
	require.Contains(t, cause, "did not run for")
	t.Logf("self declared dead: %s", cause)
	frozenWatch.unpause()

	client := consultest.Client(t, addr)
	id := checkID(instanceID(svc, b.self))
	for end := time.Now().Add(2*testTTL + testRefresh); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		checks, err := client.Agent().Checks()
		require.NoError(t, err)
		require.Equal(t, api.HealthCritical, checks[id].Status, "the check went back to passing")
	}
	require.Equal(t, 1, a.rec.count(MemberUp, b.self))
	require.Equal(t, 1, b.rec.count(MemberDown, b.self))
	require.ErrorIs(t, b.p.Update(context.Background(), b.self), ErrDeclaredDead)
}
