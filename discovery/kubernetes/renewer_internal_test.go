package kubernetes

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/discovery/internal/evqueue"
)

// A process frozen after its lease was written but before the renewer's
// goroutine first ran (TestFrozenAndRestarted froze one right after it
// registered) must count the freeze: its lease expired meanwhile and the
// cluster buried it. The renewer counts from the registration's write,
// and gives up on its first pass, before writing anything (the provider
// here has no client: a renewal would panic).
func TestRenewerCountsFromRegistration(t *testing.T) {
	cfg, err := Config{Namespace: "ns", PodName: "p", LabelSelector: "app=x", LeaseTTL: 2 * time.Second}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	self := discovery.Member{Node: "n", Incarnation: 7, Addr: "127.0.0.1:1"}
	stopped := false
	p := &Provider{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), updates: make(chan updateReq),
		self: self, queue: evqueue.New[discovery.Event](), stopRen: func() { stopped = true }, renewerDone: make(chan struct{})}
	p.runRenewer(context.Background(), self, time.Now().Add(-cfg.LeaseTTL))
	dead, why := p.Dead()
	if !dead || !strings.Contains(why, "did not run for") {
		t.Fatalf("after a freeze of a TTL since registering: dead=%v (%q), want declared dead by the renewer", dead, why)
	}
	if !stopped {
		t.Fatal("declaring itself dead did not stop the renewer's context")
	}
	p.queue.Close()
	var got []discovery.Event
	p.queue.Run(context.Background(), func(ev discovery.Event) { got = append(got, ev) })
	if len(got) != 1 || got[0].Type != discovery.MemberDown || got[0].Member.ID() != self.ID() {
		t.Fatalf("events = %v, want MemberDown of self", got)
	}
}
