package scaletest

import (
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
)

// sink is the scale_sink actor: it counts the numbered sends it gets and
// those that came out of their sender's order. Its map is the actor's
// own state; the counters are read by the reporter.
type sink struct {
	last       map[string]int64 // by sender: the highest number seen
	received   atomic.Int64
	outOfOrder atomic.Int64
}

func (s *sink) receive(c *actor.Context) {
	e, ok := c.Message().(*testpb.Echo)
	if !ok {
		return
	}
	s.received.Add(1)
	if e.N <= s.last[e.From] {
		s.outOfOrder.Add(1)
		return
	}
	s.last[e.From] = e.N
}

// SinkStats are a node's sink counters.
type SinkStats struct {
	Received   int64 `json:"received"`
	OutOfOrder int64 `json:"out_of_order"`
}
