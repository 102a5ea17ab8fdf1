package health_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/health"
	"github.com/mailroom-go/mailroom/remote"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startNode starts a node on loopback whose static seeds may not run.
func startNode(t *testing.T, name string, seeds ...string) (*actor.System, *remote.Node) {
	t.Helper()
	sys, err := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: "health-test-cookie-0123456789", Listen: "127.0.0.1:0", Seeds: seeds})
	if err != nil {
		sys.Stop(context.Background())
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Stop(context.Background()) })
	return sys, n
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func want(t *testing.T, srv *httptest.Server, path string, code int, body string) {
	t.Helper()
	got, b := get(t, srv, path)
	if got != code || !strings.Contains(b, body) {
		t.Fatalf("GET %s = %d %q, want %d containing %q", path, got, b, code, body)
	}
}

// The cold-start rule: a node is ready while its seed peers are not even
// running, so nodes whose readiness gates a Service all become ready.
func TestReadyWithoutPeers(t *testing.T) {
	_, n := startNode(t, "alone", "peer-1=127.0.0.1:1", "peer-2=127.0.0.1:2")
	p, err := health.New(n, health.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	want(t, srv, "/livez", 200, "ok")
	want(t, srv, "/readyz", 200, "ok")
}

// Three nodes probed at once, each listing the other two, none of them
// ready before the others: all three are ready.
func TestColdStartThreeNodes(t *testing.T) {
	var srvs []*httptest.Server
	for _, name := range []string{"c-1", "c-2", "c-3"} {
		_, n := startNode(t, name, "c-9=127.0.0.1:9")
		p, err := health.New(n, health.Config{})
		if err != nil {
			t.Fatal(err)
		}
		s := httptest.NewServer(p.ReadyHandler())
		defer s.Close()
		srvs = append(srvs, s)
	}
	for _, s := range srvs {
		want(t, s, "/", 200, "ok")
	}
}

func TestNeedsDrainStop(t *testing.T) {
	sys, n := startNode(t, "needy")
	var dbDown atomic.Bool
	dbDown.Store(true)
	p, err := health.New(n, health.Config{Needs: map[string]health.Check{
		"db": func(ctx context.Context) error {
			if dbDown.Load() {
				return errors.New("connection refused")
			}
			return nil
		},
		"slow": func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	}, ReadyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	want(t, srv, "/readyz", 503, "needs db: connection refused; needs slow: context deadline exceeded")
	want(t, srv, "/livez", 200, "ok") // a missing dependency is not a reason to restart
	dbDown.Store(false)
	want(t, srv, "/readyz", 503, "needs slow")

	p2, err := health.New(n, health.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(p2.Handler())
	defer srv2.Close()
	want(t, srv2, "/readyz", 200, "ok")
	n.Drain(context.Background())
	want(t, srv2, "/readyz", 503, "draining")
	want(t, srv2, "/livez", 200, "ok")

	resp, err := srv2.Client().Post(srv2.URL+"/livez", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /livez = %d, want 405", resp.StatusCode)
	}

	sys.Stop(context.Background())
	want(t, srv2, "/livez", 503, "stopped")
	want(t, srv2, "/readyz", 503, "stopping")
}

func TestConfigErrors(t *testing.T) {
	_, n := startNode(t, "cfg")
	for _, c := range []struct {
		cfg  health.Config
		want string
	}{
		{health.Config{LiveTimeout: -1}, "LiveTimeout"},
		{health.Config{ReadyTimeout: -1}, "ReadyTimeout"},
		{health.Config{Needs: map[string]health.Check{"": func(context.Context) error { return nil }}}, "name"},
		{health.Config{Needs: map[string]health.Check{"x": nil}}, "nil"},
	} {
		if _, err := health.New(n, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	if _, err := health.New(nil, health.Config{}); err == nil {
		t.Error("New(nil) succeeded")
	}
}
