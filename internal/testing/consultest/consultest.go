package consultest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

const (
	// EnvAddr is the shared agent's HTTP address.
	EnvAddr = "CONSUL_HTTP_ADDR"
	// EnvBin is the path of the Consul binary, for StartAgent.
	EnvBin = "MAILROOM_CONSUL_BIN"
)

// Addr returns the shared agent's address (CONSUL_HTTP_ADDR).
func Addr(t testing.TB) string {
	t.Helper()
	return require(t, EnvAddr)
}

// Bin returns the Consul binary's path (MAILROOM_CONSUL_BIN).
func Bin(t testing.TB) string {
	t.Helper()
	bin := require(t, EnvBin)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("consultest: %s: %v", EnvBin, err)
	}
	return bin
}

func require(t testing.TB, env string) string {
	t.Helper()
	if v := os.Getenv(env); v != "" {
		return v
	}
	msg := fmt.Sprintf("%s is not set: run `make test` (or scripts/consul.sh run -- go test ./...) to run Consul tests", env)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: failing instead of skipping)")
	}
	t.Skip(msg)
	return ""
}

// Client returns an API client for addr whose idle connections are
// closed when the test ends (so goleak sees no stray HTTP goroutines).
func Client(t testing.TB, addr string) *api.Client {
	t.Helper()
	cfg := api.DefaultConfig()
	cfg.Address = addr
	cfg.Transport = http.DefaultTransport.(*http.Transport).Clone()
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatalf("consultest: client for %s: %v", addr, err)
	}
	t.Cleanup(cfg.Transport.CloseIdleConnections)
	return c
}

// WaitForLeader polls addr until the agent reports a raft leader, or
// fails the test after timeout.
func WaitForLeader(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	if err := waitForLeader(addr, timeout, nil); err != nil {
		t.Fatalf("consultest: %v", err)
	}
}

// waitForLeader polls until addr has a leader. exited, if not nil, closes
// when the agent process exits, which ends the wait early.
func waitForLeader(addr string, timeout time.Duration, exited <-chan struct{}) error {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	cfg := api.DefaultConfig()
	cfg.Address = addr
	cfg.Transport = tr
	c, err := api.NewClient(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		leader, err := c.Status().LeaderWithQueryOptions((&api.QueryOptions{}).WithContext(ctx))
		if err == nil && leader != "" {
			return nil
		}
		last = err
		select {
		case <-exited:
			return fmt.Errorf("agent at %s exited before electing a leader", addr)
		case <-ctx.Done():
			return fmt.Errorf("agent at %s has no leader after %v (last error: %v)", addr, timeout, last)
		case <-tick.C:
		}
	}
}
