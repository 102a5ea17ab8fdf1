package discovery

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/stretchr/testify/require"
)

// These tests run against a real agent: run them with `make test` or
// scripts/consul.sh run -- go test ./discovery/...

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
