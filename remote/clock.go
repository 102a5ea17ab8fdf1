package remote

import (
	"sync/atomic"
	"time"
)

// The node's liveness and idle machinery reads time in one place, now:
// the stamps a link keeps (lastRead, lastSent, idleSince), the times of
// a node name's table entry (slot.seen, its tombstones), and the time
// each liveness step runs at. A running node reads the wall clock and
// its liveness loop steps on a ticker. A test may give the node a
// logical clock instead (export_test.go): then no loop runs, time moves
// only when the test moves it, and the test runs each step itself
// (tick), so that "silent for three intervals" is a fact of the test's
// arithmetic and not of the machine's load.
//
// What is not on this clock: deadlines carried on the wire (a peer's
// clock, compared with ours), timers a goroutine waits on (a fence's
// window, the read budget's patience, shutdown's grace), log rate
// limits, and what Stats and Pending report.

// liveness is the node's liveness and idle step: the clock it reads and
// when it last swept and pruned. It owns no peer or link: each step reads
// the node's peer table through node and acts on what it finds. Steps run
// one at a time (the loop's goroutine, or a test's logical clock, which
// serialises them), so swept and pruned need no lock.
type liveness struct {
	node *Node
	// logical, when set, is the clock the liveness and idle machinery
	// reads (unix ns, moved by a test), and no loop runs; nil: the wall
	// clock.
	logical *atomic.Int64
	// swept and pruned are when the step last swept and pruned.
	swept, pruned time.Time
}

// now is the time the liveness and idle machinery reads. On the wall
// clock it is time.Now, with a nil check in front: the writers stamp
// lastSent with it once per write, as they did with time.Now.
func (lv *liveness) now() time.Time {
	if lv.logical != nil {
		return time.Unix(0, lv.logical.Load())
	}
	return time.Now()
}

// loop is the node's one liveness watcher: it runs a step (tick) every
// quarter heartbeat interval, on the wall clock. A node on a logical
// clock runs none: its driver calls tick.
func (lv *liveness) loop() {
	n := lv.node
	defer n.wg.Done()
	every := n.cfg.Liveness.HeartbeatInterval / 4
	if every < 5*time.Millisecond {
		every = 5 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case now := <-t.C:
			lv.tick(now)
		}
	}
}

// tick is one liveness step at now: heartbeats on idle links, silent
// links closed (checkLinks), idle links closed (closeIdleLinks), and
// now and then parked workers and pool buffers swept and unused node
// names forgotten.
func (lv *liveness) tick(now time.Time) {
	n := lv.node
	lv.checkLinks(now)     // liveness.go
	lv.closeIdleLinks(now) // idle.go
	if now.Sub(lv.swept) >= workerSweep {
		lv.swept = now
		n.workers.sweep()       // callworkers.go
		(*host)(n).sweepPools() // pool.go
	}
	if now.Sub(lv.pruned) >= n.cfg.pruneEvery() {
		lv.pruned = now
		lv.pruneNodes(now) // prune.go
	}
}
