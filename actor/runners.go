package actor

import (
	"runtime"
	"sync/atomic"
	"time"
)

// An actor has no goroutine of its own: a message that finds its mailbox
// idle starts a run (process.run), which ends when the mailbox is empty.
// A fresh goroutine starts with the smallest stack and grows it, copying
// it each time, as the handler goes deeper: a reply encoded for another
// node (protobuf's Size and Marshal) takes it to 16 KiB or more, and in
// profiles of grain and named calls over 10,000 actors, copying stacks
// was a fifth to a third of the CPU. So a goroutine that ended a run is
// kept parked for a while (runnerIdle) and takes the next run started
// meanwhile, with its stack already grown. At most 128 per processor (GOMAXPROCS) wait at
// once; the others end. They all end when the System stops.
type runners struct {
	handoff chan *process // unbuffered: a send succeeds only into a parked runner
	parked  atomic.Int32
	max     int32
	stop    <-chan struct{}
}

// runnerIdle is how long a parked runner waits for a run before it ends.
const runnerIdle = 500 * time.Millisecond

func (r *runners) init(stop <-chan struct{}) {
	r.handoff = make(chan *process)
	r.max = int32(128 * runtime.GOMAXPROCS(0))
	r.stop = stop
}

// start runs p on a parked runner, or a new one.
func (r *runners) start(p *process) {
	select {
	case r.handoff <- p:
	default:
		go r.loop(p)
	}
}

func (r *runners) loop(p *process) {
	p.run()
	if r.parked.Add(1) > r.max {
		r.parked.Add(-1)
		return
	}
	t := time.NewTimer(runnerIdle)
	defer t.Stop()
	for {
		select {
		case p = <-r.handoff:
			r.parked.Add(-1)
			p.run()
			if r.parked.Add(1) > r.max {
				r.parked.Add(-1)
				return
			}
			t.Reset(runnerIdle)
		case <-t.C:
			r.parked.Add(-1)
			return
		case <-r.stop:
			r.parked.Add(-1)
			return
		}
	}
}
