package scaletest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testnode.SetChildPreHook(PreHook)
	testnode.SetChildHook(Hook)
	testnode.MaybeRunChild()
	goleak.VerifyTestMain(m)
}

// serviceName is a Consul service of its own per run, so runs sharing the
// agent do not see each other's nodes.
func serviceName(tag string) string {
	return fmt.Sprintf("mr-scale-%s-%d-%d", tag, os.Getpid(), time.Now().UnixNano())
}

// TestSmallClusterSurvivesAKill is the scale test at its smallest size,
// so that `make test` keeps the harness working: four nodes, one killed
// and restarted under load.
func TestSmallClusterSurvivesAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four node processes and a Consul agent")
	}
	addr := consultest.Addr(t)
	res, err := Run(Config{
		Nodes: 4, Targets: 2, Kill: 1,
		Load:    Load{CallsPerSec: 20, RequestsPerSec: 20, SendsPerSec: 50, Holders: 2},
		Consul:  addr,
		Service: serviceName("small"),
		Dir:     t.TempDir(),
		Seed:    1,
		LoadFor: 2 * time.Second,
		Logf:    t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Line())
	if res.Hung != 0 || res.WrongIncarnation != 0 {
		t.Errorf("hung=%d wrong_incarnation=%d, want 0 and 0", res.Hung, res.WrongIncarnation)
	}
	if res.OutOfOrder != 0 {
		t.Errorf("%d sends out of their sender's order", res.OutOfOrder)
	}
	if len(res.Unexpected) != 0 {
		t.Errorf("unexpected errors: %q", res.Unexpected)
	}
	if res.WatchesOpenMax != 1 {
		t.Errorf("a node held %d blocking watches open at once, want exactly 1", res.WatchesOpenMax)
	}
	if res.Ops["call.ok"] == 0 || res.Ops["request.ok"] == 0 || res.Received == 0 {
		t.Errorf("the load did not run: ops %v, received %d", res.Ops, res.Received)
	}
	if res.Ops["hold.node_down"] == 0 {
		t.Errorf("no long call ended as node_down when its node was killed: ops %v", res.Ops)
	}
}
