package consultest

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, path string
		want         Kind
	}{
		{"GET", "/v1/health/service/mailroom", KindWatch},
		{"PUT", "/v1/agent/check/update/mailroom-a-01:ttl", KindTTL},
		{"GET", "/v1/agent/checks", KindChecks},
		{"PUT", "/v1/agent/service/register", KindRegister},
		{"PUT", "/v1/agent/service/deregister/mailroom-a-01", KindDeregister},
		{"GET", "/v1/catalog/services", KindOther},
		{"PUT", "/v1/health/service/x", KindOther},
	} {
		if got := Classify(c.method, c.path); got != c.want {
			t.Errorf("Classify(%s %s) = %v, want %v", c.method, c.path, got, c.want)
		}
	}
}

// TestProxyCountsAndHoldsWatches: requests through the proxy reach the
// agent and are counted by kind; an open blocking query is counted as an
// open watch until it returns, and Close ends one that is still open.
func TestProxyCountsAndHoldsWatches(t *testing.T) {
	p := StartProxy(t, Addr(t))
	c := Client(t, p.Addr())
	svc := "consultest-proxy-" + time.Now().Format("150405.000000")
	if err := c.Agent().ServiceRegister(&api.AgentServiceRegistration{ID: svc, Name: svc, Port: 1}); err != nil {
		t.Fatal(err)
	}
	_, meta, err := c.Health().Service(svc, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// Blocks until the agent's wait ends or the proxy closes.
		_, _, err := c.Health().Service(svc, "", false, &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: time.Minute})
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for p.Counts().WatchOpen != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the blocking query never showed as an open watch: %+v", p.Counts())
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
	if err := c.Agent().ServiceDeregister(svc); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the watch should return with the deregistration: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the watch did not return after the deregistration")
	}
	got := p.Counts()
	if got.Of(KindRegister) != 1 || got.Of(KindDeregister) != 1 || got.Of(KindWatch) != 2 || got.Total() != 4 {
		t.Fatalf("counts: %+v", got)
	}
	if got.WatchOpen != 0 || got.WatchOpenMax != 1 || len(got.WatchPaths) != 1 || got.WatchPaths[0] != "/v1/health/service/"+svc {
		t.Fatalf("watches: %+v", got)
	}

	// A watch still open when the proxy closes ends with an error.
	go func() {
		_, _, err := c.Health().Service(svc, "", false, &api.QueryOptions{WaitIndex: meta.LastIndex + 1000, WaitTime: time.Minute})
		done <- err
	}()
	for p.Counts().WatchOpen != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the second blocking query never showed as an open watch: %+v", p.Counts())
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("a watch open at Close should fail")
	}
	sum := got.Add(got)
	if sum.Total() != 8 || sum.WatchOpenMax != 1 || len(sum.WatchPaths) != 1 {
		t.Fatalf("Add: %+v", sum)
	}
	if d := sum.Sub(got); d.Total() != 4 {
		t.Fatalf("Sub: %+v", d)
	}
}
