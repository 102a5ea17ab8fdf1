package panode

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/spec"
	"github.com/mailroom-go/mailroom/bench/internal/tally"
)

type counting struct{ sends int }

func (c *counting) Send(*actor.PID, any) { c.sends++ }
func (c *counting) RequestFuture(*actor.PID, any, time.Duration) *actor.Future {
	panic("not used")
}

// TestTheWriterAddsNoAllocationToASend: as in mrnode, the harness's share
// of a send is nothing.
func TestTheWriterAddsNoAllocationToASend(t *testing.T) {
	payload, err := benchpb.Payload(benchpb.ProfileBytes)
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{op: spec.OpSend, payload: payload, targets: []*actor.PID{actor.NewPID("x", "r0")}, calls: tally.New(1)}
	var c counting
	if n := testing.AllocsPerRun(1000, func() { d.do(&c, 0) }); n != 0 {
		t.Fatalf("%v allocations per send in the writer", n)
	}
	if c.sends == 0 {
		t.Fatal("the caller was not called")
	}
}
