package discovery

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Every test, the Consul ones included, must leave no goroutine behind:
// the providers close their HTTP connections in Stop, so no ignore rule
// for net/http is needed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testLogger writes provider logs to the test log. Providers are stopped
// in t.Cleanup, before the test completes, so nothing logs after it.
func testLogger(t testing.TB, name string) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})).With("provider", name)
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// Timing used by the Consul tests: short, so they run quickly.
const (
	testTTL     = 2 * time.Second
	testRefresh = 500 * time.Millisecond
)

// testService is a service name of its own for each test, so tests that
// share the agent do not see each other's nodes.
func testService() string { return fmt.Sprintf("mrtest-%08x", rand.Uint32()) }

func testMember(node string) Member {
	return Member{
		Node:        node,
		Incarnation: rand.Uint64() | 1,
		Addr:        fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(20000)),
		PoolWorkers: 1 + rand.IntN(16),
		Meta:        map[string]string{"services": node + "-svc"},
	}
}

// node is one provider under test with its self and received events.
type node struct {
	name string
	p    *Consul
	self Member
	rec  *recorder
}

// newNode creates a provider for addr and service; hooks may set test
// hooks before Start. It is stopped when the test ends.
func newNode(t *testing.T, addr, service, name string, hooks ...func(*Consul)) *node {
	t.Helper()
	p, err := NewConsul(ConsulConfig{
		Address:      addr,
		Service:      service,
		TTL:          testTTL,
		RefreshEvery: testRefresh,
		Logger:       testLogger(t, name),
	})
	require.NoError(t, err)
	for _, h := range hooks {
		h(p)
	}
	n := &node{name: name, p: p, self: testMember(name), rec: &recorder{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Start(ctx, n.self, n.rec.notify))
	t.Cleanup(func() { n.stop(t) })
	return n
}

func (n *node) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.p.Stop(ctx); err != nil && !n.p.crash {
		t.Errorf("%s: Stop: %v", n.name, err)
	}
}

// crash stops n as a killed process would: no more refreshes, no
// deregistration.
func (n *node) crash(t *testing.T) {
	n.p.crash = true
	n.stop(t)
}

// recorder collects events with the time they arrived.
type recorder struct {
	mu  sync.Mutex // protects following
	evs []Event
	at  []time.Time
}

func (r *recorder) notify(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
	r.at = append(r.at, time.Now())
}

func (r *recorder) count(typ EventType, m Member) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.evs {
		if e.Type == typ && e.Member.ID() == m.ID() {
			n++
		}
	}
	return n
}

func (r *recorder) events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.evs...)
}

// wait polls until an event of type typ about m (matching match, if
// given) arrived, or fails after timeout. It returns the event and when
// it arrived.
func (r *recorder) wait(t *testing.T, timeout time.Duration, typ EventType, m Member, match ...func(Member) bool) (Event, time.Time) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		for i, e := range r.evs {
			if e.Type == typ && e.Member.ID() == m.ID() && (len(match) == 0 || match[0](e.Member)) {
				at := r.at[i]
				r.mu.Unlock()
				return e, at
			}
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no %v event for %s within %v; got %v", typ, m.ID(), timeout, r.events())
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// pauser is a beforeTick hook that blocks the TTL updater while paused,
// as if the process were frozen.
type pauser struct {
	mu     sync.Mutex // protects following
	resume chan struct{}
}

func (p *pauser) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resume = make(chan struct{})
}

func (p *pauser) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

func (p *pauser) hook(ctx context.Context) {
	p.mu.Lock()
	ch := p.resume
	p.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}
