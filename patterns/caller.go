package patterns

import (
	"context"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/proto"
)

// caller makes the call (or cast) to one entry of the node list for its
// coordinator. The call runs on a goroutine the caller owns, through a
// Sender handle of its own, so that its Receive never blocks: stopping a
// caller (a kill) cancels its call at once, and its Stopped waits for the
// goroutine. A caller reports once to its parent and stops; one that ends
// before it reported counts as unreachable for its entry.
type caller struct {
	job    *job
	entry  int
	cast   bool
	parent context.Context // the coordinator's ctx for its callers

	cancel   context.CancelFunc
	done     chan struct{} // closed when the goroutine has returned
	stopping atomic.Bool   // set by Stopping; read by the goroutine
}

// callDone is the goroutine's result, sent to the caller itself.
type callDone struct {
	v   proto.Message
	err error
}

func newCaller(j *job, entry int, cast bool, ctx context.Context) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &caller{job: j, entry: entry, cast: cast, parent: ctx}
	})
}

// Receive is the caller's behaviour.
func (k *caller) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		ctx, cancel := context.WithCancel(k.parent)
		k.cancel, k.done = cancel, make(chan struct{})
		go k.run(ctx, c.System(), c.Self())
	case callDone:
		c.Send(c.Parent(), report(m))
		c.Stop(c.Self())
	case actor.Stopping, actor.Stopped:
		if k.done == nil {
			return // Started never ran
		}
		k.stopping.Store(true)
		k.cancel()
		if _, last := m.(actor.Stopped); last {
			<-k.done
		}
	}
}

// run makes the call and hands the result to the caller actor, unless
// it is being stopped (then nobody wants it).
func (k *caller) run(ctx context.Context, sys *actor.System, self actor.PID) {
	defer close(k.done)
	j, node := k.job, k.job.nodes[k.entry]
	snd := sys.NewSender()
	var d callDone
	if k.cast {
		snd.Cast(node, j.fn, j.arg)
	} else {
		d.v, d.err = snd.Call(ctx, node, j.fn, j.arg)
	}
	if !k.stopping.Load() {
		sys.Send(self, d)
	}
}
