package discovery

import (
	"context"
	"errors"
	"github.com/mailroom-go/mailroom/internal/discoveryhooks"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/stretchr/testify/require"
)

func TestTTLCore(t *testing.T) {
	const ttl, reap = 3 * time.Second, time.Minute
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ms := time.Millisecond

	t.Run("steady refresh", func(t *testing.T) {
		c := newTTLCore(ttl, reap, t0, t0)
		for i := 1; i <= 5; i++ {
			now := at(time.Duration(i) * time.Second)
			_, dead := c.stalled(now)
			require.False(t, dead)
			act, _ := c.decide(now, checkPassing, false)
			require.Equal(t, actRefresh, act)
			_, dead = c.done(now, now.Add(5*ms), nil, false)
			require.False(t, dead)
		}
		act, _ := c.decide(at(6*time.Second), checkPassing, true)
		require.Equal(t, actRegister, act, "Update re-registers")
	})

	t.Run("frozen between attempts", func(t *testing.T) {
		c := newTTLCore(ttl, reap, t0, t0)
		reason, dead := c.stalled(at(3*time.Second + ms))
		require.True(t, dead)
		require.Contains(t, reason, "frozen")
	})

	t.Run("frozen inside a request", func(t *testing.T) {
		c := newTTLCore(ttl, reap, t0, t0)
		now := at(time.Second)
		_, dead := c.stalled(now)
		require.False(t, dead)
		// The refresh went out at 1s and came back at 4.5s.
		reason, dead := c.done(now, at(4500*ms), nil, false)
		require.True(t, dead)
		require.Contains(t, reason, "may have expired")
	})

	t.Run("agent reports critical", func(t *testing.T) {
		c := newTTLCore(ttl, reap, t0, t0)
		act, _ := c.decide(at(time.Second), checkCritical, false)
		require.Equal(t, actDead, act)
		act, _ = c.decide(at(time.Second), checkCritical, true)
		require.Equal(t, actDead, act, "Update does not revive a critical check")
	})

	t.Run("agent restarted and forgot us", func(t *testing.T) {
		c := newTTLCore(ttl, reap, t0, t0)
		// The agent is unreachable for 10s: every attempt fails.
		for i := 1; i <= 10; i++ {
			now := at(time.Duration(i) * time.Second)
			_, dead := c.stalled(now)
			require.False(t, dead)
			c.failed(now.Add(ms))
		}
		now := at(11 * time.Second)
		act, _ := c.decide(now, checkMissing, false)
		require.Equal(t, actRegister, act)
		_, dead := c.done(now, now.Add(ms), nil, true)
		require.False(t, dead, "a fresh registration has no expired timer behind it")
		act, _ = c.decide(at(12*time.Second), checkPassing, false)
		require.Equal(t, actRefresh, act)
		_, dead = c.done(at(12*time.Second), at(12*time.Second+ms), nil, false)
		require.False(t, dead)
	})

	t.Run("check missing for longer than the reap delay", func(t *testing.T) {
		c := newTTLCore(ttl, reap, t0, t0)
		act, reason := c.decide(at(reap), checkMissing, false)
		require.Equal(t, actDead, act)
		require.Contains(t, reason, "reaped")
	})

	t.Run("unreachable, then passing past TTL", func(t *testing.T) {
		c := newTTLCore(ttl, reap, t0, t0)
		c.failed(at(time.Second))
		c.failed(at(2 * time.Second))
		now := at(3500 * ms)
		act, _ := c.decide(now, checkPassing, false)
		require.Equal(t, actRefresh, act)
		_, dead := c.done(now, now.Add(ms), nil, false)
		require.True(t, dead, "the refresh landed after the previous one's TTL")
	})
}

func TestBackoff(t *testing.T) {
	minD, maxD := 100*time.Millisecond, 2*time.Second
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: 1600 * time.Millisecond, 6: maxD, 60: maxD} {
		for range 20 {
			got := backoff(minD, maxD, n)
			require.GreaterOrEqual(t, got, want/2, "n=%d", n)
			require.LessOrEqual(t, got, want, "n=%d", n)
		}
	}
}

func TestConsulConfig(t *testing.T) {
	t.Setenv("CONSUL_HTTP_ADDR", "10.0.0.1:8500")
	d := DefaultConsulConfig()
	require.Equal(t, "10.0.0.1:8500", d.Address)
	c, err := ConsulConfig{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, "10.0.0.1:8500", c.Address)
	require.Equal(t, "mailroom", c.Service)
	require.Equal(t, 3*time.Second, c.TTL)
	require.Equal(t, time.Second, c.RefreshEvery)
	require.Equal(t, time.Minute, c.DeregisterCriticalAfter)
	require.Equal(t, 10*time.Second, c.WaitTime)
	require.Equal(t, 50*time.Millisecond, c.MinQueryInterval)
	require.Nil(t, c.Logger, "no default of its own: the node's logger is handed over at remote.Start")

	c, err = ConsulConfig{TTL: 600 * time.Millisecond}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, 200*time.Millisecond, c.RefreshEvery, "RefreshEvery follows TTL")

	t.Setenv("CONSUL_HTTP_ADDR", "")
	require.Equal(t, "127.0.0.1:8500", DefaultConsulConfig().Address)

	for field, cfg := range map[string]ConsulConfig{
		"Service":                 {Service: "no spaces"},
		"TTL":                     {TTL: time.Millisecond},
		"RefreshEvery":            {TTL: time.Second, RefreshEvery: 2 * time.Second},
		"DeregisterCriticalAfter": {DeregisterCriticalAfter: 30 * time.Second},
		"WaitTime":                {WaitTime: time.Hour},
		"MinQueryInterval":        {MinQueryInterval: -1},
		"BackoffMax":              {BackoffMin: time.Second, BackoffMax: time.Millisecond},
	} {
		_, err := NewConsul(cfg)
		require.ErrorContains(t, err, "consul config: "+field+":", field)
	}
}

func TestConsulMetaRoundTrip(t *testing.T) {
	cfg, err := ConsulConfig{Service: "svc"}.withDefaults()
	require.NoError(t, err)
	self := Member{Node: "orders-1", Incarnation: 0xabc, Addr: "10.1.2.3:7000", PoolWorkers: 8, Draining: true,
		Meta: map[string]string{"services": "a,b", "ver-2_x": "1"}}
	require.NoError(t, validateSelf(self))
	reg := registration(cfg, self, api.HealthPassing)
	require.Equal(t, "svc-orders-1-0000000000000abc", reg.ID)
	require.Equal(t, "10.1.2.3", reg.Address)
	require.Equal(t, 7000, reg.Port)
	require.Equal(t, "0000000000000abc", reg.Meta["incarnation"])
	require.Equal(t, "true", reg.Meta["draining"])
	require.Equal(t, "a,b", reg.Meta["m_services"])
	require.Equal(t, "svc-orders-1-0000000000000abc:ttl", reg.Checks[0].CheckID)
	require.Equal(t, "1m0s", reg.Checks[0].DeregisterCriticalServiceAfter)

	got, err := parseMember(&api.AgentService{ID: reg.ID, Meta: reg.Meta})
	require.NoError(t, err)
	require.Equal(t, self, got)

	self.Meta = nil
	got, err = parseMember(&api.AgentService{Meta: registration(cfg, self, "").Meta})
	require.NoError(t, err)
	require.Equal(t, self, got)

	_, err = parseMember(&api.AgentService{Meta: map[string]string{"node": "x"}})
	require.Error(t, err)
}

func TestConsulValidateSelf(t *testing.T) {
	ok := Member{Node: "n", Incarnation: 1, Addr: "127.0.0.1:1"}
	require.NoError(t, validateSelf(ok))
	bad := map[string]func(*Member){
		"Member.Node":        func(m *Member) { m.Node = "a/b" },
		"Member.Incarnation": func(m *Member) { m.Incarnation = 0 },
		"Member.Addr":        func(m *Member) { m.Addr = "nohost" },
		"port":               func(m *Member) { m.Addr = "h:0" },
		"Member.PoolWorkers": func(m *Member) { m.PoolWorkers = -1 },
		"key \"a.b\"":        func(m *Member) { m.Meta = map[string]string{"a.b": ""} },
		"key \"\"":           func(m *Member) { m.Meta = map[string]string{"": ""} },
		"126":                func(m *Member) { m.Meta = map[string]string{strings.Repeat("k", 127): ""} },
		"bytes long":         func(m *Member) { m.Meta = map[string]string{"k": strings.Repeat("v", 513)} },
		"at most 59":         func(m *Member) { m.Meta = manyMeta(60) },
	}
	for want, mutate := range bad {
		m := ok
		mutate(&m)
		require.ErrorContains(t, validateSelf(m), want)
	}
	m := ok
	m.Meta = manyMeta(58)
	m.Meta[strings.Repeat("k", 126)] = strings.Repeat("v", 512)
	require.NoError(t, validateSelf(m))
}

func manyMeta(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m["k"+strconv.Itoa(i)] = "v"
	}
	return m
}

func TestConsulLifecycleWithoutAgent(t *testing.T) {
	// A port nothing listens on: Start fails and leaves nothing running.
	p, err := NewConsul(ConsulConfig{Address: "127.0.0.1:1", Logger: discardLogger()})
	require.NoError(t, err)
	self := Member{Node: "n", Incarnation: 1, Addr: "127.0.0.1:7000"}
	require.ErrorContains(t, p.Update(context.Background(), self), "before Start")
	require.Error(t, p.Start(context.Background(), self, func(Event) {}))
	require.ErrorContains(t, p.Start(context.Background(), self, nil), "notify is nil")
	require.NoError(t, p.Stop(context.Background()))
	require.NoError(t, p.Stop(context.Background()), "idempotent")
	require.True(t, errors.Is(p.Start(context.Background(), self, func(Event) {}), ErrStopped))
	require.True(t, errors.Is(p.Update(context.Background(), self), ErrStopped))
}

// TestConsulLogsToTheNodesLoggerUnlessConfigured: remote.Start hands the
// provider its node's logger (discoveryhooks.DefaultLogger); a Logger
// set in the config is kept.
func TestConsulLogsToTheNodesLoggerUnlessConfigured(t *testing.T) {
	nodeLog := discardLogger()
	c, err := NewConsul(ConsulConfig{Address: "127.0.0.1:1"})
	require.NoError(t, err)
	discoveryhooks.DefaultLogger(c, nodeLog)
	require.Same(t, nodeLog, c.log)
	require.Same(t, nodeLog, c.updErrs.log)

	own := discardLogger()
	c, err = NewConsul(ConsulConfig{Address: "127.0.0.1:1", Logger: own})
	require.NoError(t, err)
	discoveryhooks.DefaultLogger(c, nodeLog)
	require.Same(t, own, c.log, "the configured logger stays")
}
