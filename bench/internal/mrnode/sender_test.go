package mrnode

import (
	"context"
	"testing"

	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/spec"
	"github.com/mailroom-go/mailroom/bench/internal/tally"
	"google.golang.org/protobuf/proto"
)

// counting is a caller that only counts.
type counting struct{ sends, casts, calls int }

func (c *counting) SendNamed(node, name string, msg any)    { c.sends++ }
func (c *counting) Cast(node, fn string, arg proto.Message) { c.casts++ }
func (c *counting) Call(context.Context, string, string, proto.Message) (proto.Message, error) {
	c.calls++
	return nil, nil
}

// TestTheWriterAddsNoAllocationToASend: sender_allocs_per_msg counts the
// whole process; the harness's share of a send (the writer's loop, its
// payload, its target's name) must be nothing, so that figure is the
// runtime's.
func TestTheWriterAddsNoAllocationToASend(t *testing.T) {
	payload, err := benchpb.Payload(benchpb.ProfileBytes)
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{op: spec.OpSend, payload: payload, names: []string{"r0", "r1"}, calls: tally.New(2)}
	var c counting
	if n := testing.AllocsPerRun(1000, func() { d.do(&c, 1) }); n != 0 {
		t.Fatalf("%v allocations per send in the writer", n)
	}
	d.op = spec.OpCast
	if n := testing.AllocsPerRun(1000, func() { d.do(&c, 1) }); n != 0 {
		t.Fatalf("%v allocations per cast in the writer", n)
	}
	if c.sends == 0 || c.casts == 0 {
		t.Fatal("the caller was not called")
	}
}
