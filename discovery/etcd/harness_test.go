package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/discovery/discoverytest"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"
)

// These tests run against a real etcd: `make test-etcd`, or
// scripts/etcd.sh run -- sh -c 'cd discovery/etcd && go test ./...'.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Timing used by the tests: etcd grants leases by the second, and its
// least TTL is about 1.5 s.
const (
	testTTL     = 2 * time.Second
	testRefresh = 500 * time.Millisecond
)

// endpoint is the etcd that scripts/etcd.sh started (ETCD_ENDPOINTS). It
// skips the test without one, and fails it under CI=true.
func endpoint(t testing.TB) string {
	t.Helper()
	e := os.Getenv("ETCD_ENDPOINTS")
	if e == "" {
		msg := "ETCD_ENDPOINTS is not set: run under scripts/etcd.sh run -- ... (make test-etcd) to run the etcd tests"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: failing instead of skipping)")
		}
		t.Skip(msg)
	}
	return strings.Split(e, ",")[0]
}

// testClient is a client of the test's own, straight to etcd.
func testClient(t testing.TB, ep string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// env is one test's etcd harness: a prefix of its own, a proxy per
// provider (so Disrupt can cut them), the providers made.
type env struct {
	t      *testing.T
	ep     string
	prefix string
	client *clientv3.Client

	mu        sync.Mutex // protects following
	proxies   []*proxy
	providers map[string]*Etcd // by the name of the node last made
}

func newEnv(t *testing.T) *env {
	ep := endpoint(t)
	return &env{
		t:         t,
		ep:        ep,
		prefix:    fmt.Sprintf("/mrtest-%08x/members/", rand.Uint32()),
		client:    testClient(t, ep),
		providers: map[string]*Etcd{},
	}
}

// provider makes a provider for name, through a proxy of its own.
func (e *env) provider(t *testing.T, name string, cfg Config) *Etcd {
	u, err := url.Parse(e.ep)
	require.NoError(t, err)
	px := newProxy(t, u.Host)
	cfg.Endpoints = []string{px.URL()}
	cfg.Prefix = e.prefix
	if cfg.TTL == 0 {
		cfg.TTL, cfg.RefreshEvery = testTTL, testRefresh
	}
	cfg.Logger = slog.New(slog.NewTextHandler(tWriter{t}, nil)).With("provider", name)
	p, err := New(cfg)
	require.NoError(t, err)
	e.mu.Lock()
	e.proxies = append(e.proxies, px)
	e.providers[name] = p
	e.mu.Unlock()
	return p
}

func (e *env) harness() discoverytest.Harness {
	return discoverytest.Harness{
		TTL:     testTTL,
		Refresh: testRefresh,
		New: func(t *testing.T, name string) discoverytest.Provider {
			p := e.provider(t, name, Config{})
			var freeze gate
			p.beforeTick = freeze.wait
			return discoverytest.Provider{Provider: p, Freeze: freeze.close, Thaw: freeze.open, Crash: func() { p.crash = true }, Dead: p.Dead}
		},
		// A key lives as long as its lease: registered is alive.
		Registered: func(t testing.TB, m discovery.Member) (bool, bool) {
			resp, err := e.client.Get(context.Background(), memberKey(e.prefix, m))
			require.NoError(t, err)
			return len(resp.Kvs) > 0, len(resp.Kvs) > 0
		},
		Disrupt: e.disrupt,
	}
}

// disrupt makes every watch lose revisions it cannot resume from: it
// stalls every provider's connection, writes twice outside the prefix and
// compacts etcd's history past both, then cuts the connections. Each
// client redials and resumes its watch from a compacted revision, so
// each watcher must relist.
func (e *env) disrupt(t *testing.T, nodes []*discoverytest.Node) {
	e.mu.Lock()
	proxies := append([]*proxy(nil), e.proxies...)
	e.mu.Unlock()
	for _, px := range proxies {
		px.stall()
	}
	e.compact(t)
	for _, px := range proxies {
		px.cutAndResume()
	}
	for _, n := range nodes {
		p := n.P.Provider.(*Etcd)
		require.Eventually(t, func() bool { return p.relists.Load() > 0 }, 10*time.Second, 10*time.Millisecond, "%s relists", n.Name)
	}
}

// compact writes twice outside every test's prefix and compacts etcd's
// history up to the second write.
func (e *env) compact(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key := strings.TrimSuffix(e.prefix, "members/") + "filler"
	_, err := e.client.Put(ctx, key, "1")
	require.NoError(t, err)
	resp, err := e.client.Put(ctx, key, "2")
	require.NoError(t, err)
	_, err = e.client.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical())
	require.NoError(t, err)
}

// gate blocks the renewer while closed, as if the process were frozen.
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
