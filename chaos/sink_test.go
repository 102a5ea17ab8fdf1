//go:build chaos

package chaos

import (
	"sync"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
)

// Gate stalls the ordered sinks of a node while it is closed: a slow
// consumer on demand. The zero value is open.
type Gate struct {
	mu sync.Mutex    // protects ch
	ch chan struct{} // nil when open; closed by Open
}

// Close makes every sink stall on its next message.
func (g *Gate) Close() {
	g.mu.Lock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
	g.mu.Unlock()
}

// Open releases the sinks.
func (g *Gate) Open() {
	g.mu.Lock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
	g.mu.Unlock()
}

// Wait returns when the gate is open (or done closes).
func (g *Gate) Wait(done <-chan struct{}) {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-done:
	}
}

// orderedSink counts the testpb.Echo messages it handles and checks that
// each sender's sequence numbers (Echo.N, from 1) only go up.
type orderedSink struct {
	ctr  *Counters
	gate *Gate
	last map[actor.PID]int64
}

// SinkName is the registered name of ordered sink i.
func SinkName(i int) string { return "osink/" + itoa(i) }

func (s *orderedSink) Receive(c *actor.Context) {
	e, ok := c.Message().(*testpb.Echo)
	if !ok {
		return
	}
	s.gate.Wait(c.System().Done())
	if e.Text == StaleMark {
		s.ctr.Add(Stale, 1)
	}
	from := c.Sender()
	last := s.last[from] // 0 when new: sequences start at 1
	switch {
	case e.N <= last:
		if s.ctr.Load(OutOfOrder) < 5 { // the first few, for the log
			c.Logger().Error("chaos: out of order", "from", from.String(), "last", last, "got", e.N)
		}
		s.ctr.Add(OutOfOrder, 1)
	case e.N > last+1:
		s.ctr.Add(Gaps, e.N-last-1)
	}
	if e.N > last {
		s.last[from] = e.N
	}
	s.ctr.Add(Delivered, 1)
}

// StaleMark is the Echo.Text of messages sent to a PID of a dead
// incarnation: a sink that receives one counts it as Stale.
const StaleMark = "stale"

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for ; i > 0; i /= 10 {
		n--
		b[n] = byte('0' + i%10)
	}
	return string(b[n:])
}
