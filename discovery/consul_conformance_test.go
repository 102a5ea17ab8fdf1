package discovery_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/discovery/discoverytest"
	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/stretchr/testify/require"
)

// The shared conformance suite (discoverytest) against a real Consul
// agent: run with `make test` or
// scripts/consul.sh run -- go test ./discovery/...

const (
	conformanceTTL     = 2 * time.Second
	conformanceRefresh = 500 * time.Millisecond
)

func TestConsulDiscover(t *testing.T) {
	discoverytest.Discover(t, consulHarness(t, consultest.Addr(t)).Harness)
}

func TestConsulFrozenNode(t *testing.T) {
	discoverytest.FrozenNode(t, consulHarness(t, consultest.Addr(t)).Harness)
}

func TestConsulCrashAndRestart(t *testing.T) {
	discoverytest.CrashAndRestart(t, consulHarness(t, consultest.Addr(t)).Harness)
}

// TestConsulAgentRestart: the watch resumes after the agent restarts
// empty (dev mode); every node re-registers with its incarnation, passing.
func TestConsulAgentRestart(t *testing.T) {
	agent := consultest.StartAgent(t)
	h := consulHarness(t, agent.Addr())
	svc := h.service
	h.Disrupt = func(t *testing.T, nodes []*discoverytest.Node) {
		restartAt := time.Now()
		agent.Restart()
		client := consultest.Client(t, agent.Addr())
		require.Eventually(t, func() bool {
			entries, _, err := client.Health().Service(svc, "", true, nil)
			if err != nil {
				return false
			}
			have := map[string]bool{}
			for _, e := range entries {
				have[e.Service.ID] = true
			}
			for _, n := range nodes {
				if !have[discovery.InstanceID(svc, n.Self)] {
					return false
				}
			}
			return true
		}, 15*time.Second, 50*time.Millisecond, "every node re-registers, passing")
		t.Logf("agent restart: every node re-registered %v after the restart began", time.Since(restartAt).Round(time.Millisecond))
	}
	discoverytest.WatchResume(t, h.Harness)
}

type consulConformance struct {
	discoverytest.Harness
	service string
}

// consulHarness runs the suite on the agent at addr, in a service of its
// own so that tests sharing the agent do not see each other's nodes.
func consulHarness(t *testing.T, addr string) consulConformance {
	svc := fmt.Sprintf("mrtest-%08x", rand.Uint32())
	client := consultest.Client(t, addr)
	h := discoverytest.Harness{
		TTL:                   conformanceTTL,
		Refresh:               conformanceRefresh,
		FrozenStaysRegistered: true, // its check stays critical until DeregisterCriticalAfter
	}
	h.New = func(t *testing.T, name string) discoverytest.Provider {
		p, err := discovery.NewConsul(discovery.ConsulConfig{
			Address:      addr,
			Service:      svc,
			TTL:          conformanceTTL,
			RefreshEvery: conformanceRefresh,
			Logger:       slog.New(slog.NewTextHandler(logWriter{t}, nil)).With("provider", name),
		})
		require.NoError(t, err)
		var freeze gate
		discovery.SetBeforeTick(p, freeze.wait)
		return discoverytest.Provider{
			Provider: p,
			Freeze:   freeze.close,
			Thaw:     freeze.open,
			Crash:    func() { discovery.SetCrash(p) },
			Dead:     p.Dead,
		}
	}
	// Registered: the instance is in the agent or the catalog, or its
	// check is; alive unless that check is critical.
	h.Registered = func(t testing.TB, m discovery.Member) (registered, alive bool) {
		id := discovery.InstanceID(svc, m)
		svcs, err := client.Agent().Services()
		require.NoError(t, err)
		_, registered = svcs[id]
		entries, _, err := client.Catalog().Service(svc, "", nil)
		require.NoError(t, err)
		for _, e := range entries {
			registered = registered || e.ServiceID == id
		}
		checks, err := client.Agent().Checks()
		require.NoError(t, err)
		check, ok := checks[discovery.CheckID(id)]
		registered = registered || ok
		critical := ok && check.Status == api.HealthCritical
		return registered, registered && !critical
	}
	return consulConformance{Harness: h, service: svc}
}

// gate blocks the TTL updater while closed, as if the process were
// frozen.
type gate struct {
	mu     sync.Mutex // protects following
	resume chan struct{}
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.resume = make(chan struct{})
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resume != nil {
		close(g.resume)
		g.resume = nil
	}
}

func (g *gate) wait(ctx context.Context) {
	g.mu.Lock()
	ch := g.resume
	g.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
