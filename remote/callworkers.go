package remote

import (
	"sync"
	"sync/atomic"
	"time"
)

// Inbound calls run on reused goroutines. A goroutine per call costs its
// creation, and the growth of a fresh stack to a handler's depth, on
// every call (a third of the called side's CPU on small calls); a worker
// that finished a call parks and takes the next one as it is. A call goes
// to the worker that parked last (its stack is the warmest); when none is
// parked a new one starts. So there are never more workers than calls
// that ran at once, which admission bounds (MaxInflightPerPeer per peer
// incarnation, admission.go): the pool adds no bound of its own and
// needs none. Workers that stay parked through a whole sweep
// (workerSweep, from the liveness loop) end, so a burst's workers do not
// outlive it by much.

// workerSweep is how often parked workers are swept: one parked through
// a whole sweep ends at the next.
const workerSweep = time.Second

// workerPool is a node's workers for inbound calls.
type workerPool struct {
	mu     sync.Mutex // protects following
	idle   []*worker  // parked, the last parked last
	closed bool

	busy    atomic.Int64   // workers running a task
	calls   atomic.Int64   // of them, running an inbound call
	started atomic.Uint64  // workers started so far
	wg      sync.WaitGroup // every worker
}

// task is what a worker runs: an inbound call, or a link's reader role
// (reader.go).
type task interface{ run() }

// worker is one reusable goroutine; it parks on wake.
type worker struct {
	wake  chan task // one slot; nil tells it to end
	swept bool      // parked through the last sweep
}

// run starts c on a parked worker, or on a new one.
func (wp *workerPool) run(c task) {
	wp.begin(c)
	wp.mu.Lock()
	if k := len(wp.idle); k > 0 {
		w := wp.idle[k-1]
		wp.idle[k-1] = nil
		wp.idle = wp.idle[:k-1]
		wp.mu.Unlock()
		w.wake <- c
		return
	}
	wp.wg.Add(1)
	wp.mu.Unlock()
	wp.started.Add(1)
	w := &worker{wake: make(chan task, 1)}
	go wp.loop(w, c)
}

// adopt makes the calling goroutine a worker: it runs c, then parks like
// any other (a link's first reader, which handed its role on).
func (wp *workerPool) adopt(c task) {
	wp.begin(c)
	wp.mu.Lock()
	if wp.closed {
		wp.mu.Unlock()
		c.run()
		wp.end(c)
		return
	}
	wp.wg.Add(1)
	wp.mu.Unlock()
	wp.loop(&worker{wake: make(chan task, 1)}, c)
}

func (wp *workerPool) loop(w *worker, c task) {
	defer wp.wg.Done()
	for c != nil {
		c.run()
		wp.end(c)
		c = wp.park(w)
	}
}

// begin and end count a task running.
func (wp *workerPool) begin(t task) {
	wp.busy.Add(1)
	if _, ok := t.(*inboundCall); ok {
		wp.calls.Add(1)
	}
}

func (wp *workerPool) end(t task) {
	if _, ok := t.(*inboundCall); ok {
		wp.calls.Add(-1)
	}
	wp.busy.Add(-1)
}

// park puts w back in the pool and waits for its next task; nil when it
// is to end.
func (wp *workerPool) park(w *worker) task {
	wp.mu.Lock()
	if wp.closed {
		wp.mu.Unlock()
		return nil
	}
	w.swept = false
	wp.idle = append(wp.idle, w)
	wp.mu.Unlock()
	return <-w.wake
}

// sweep ends the workers that stayed parked since the last sweep. The
// longest parked are at the bottom of the stack.
func (wp *workerPool) sweep() {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	k := 0
	for k < len(wp.idle) && wp.idle[k].swept {
		wp.idle[k].wake <- nil
		k++
	}
	if k > 0 {
		n := copy(wp.idle, wp.idle[k:])
		clear(wp.idle[n:])
		wp.idle = wp.idle[:n]
	}
	for _, w := range wp.idle {
		w.swept = true
	}
	if cap(wp.idle) > 64 && len(wp.idle) < cap(wp.idle)/4 {
		wp.idle = append([]*worker(nil), wp.idle...)
	}
}

// close ends the parked workers, and each busy one once its task is
// done. The node calls it once every link has ended (so no worker holds
// a reader role but on its way out); when no call runs it waits for every
// worker to end. Calls still running (a handler that outlived the node's
// stop) keep their workers until they return.
func (wp *workerPool) close() {
	wp.mu.Lock()
	wp.closed = true
	for _, w := range wp.idle {
		w.wake <- nil
	}
	wp.idle = nil
	wp.mu.Unlock()
	if wp.calls.Load() == 0 {
		wp.wg.Wait()
	}
}

// count is the number of workers: running a task, or parked.
func (wp *workerPool) count() int64 {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	return wp.busy.Load() + int64(len(wp.idle))
}

// parked is the number of parked workers.
func (wp *workerPool) parked() int {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	return len(wp.idle)
}
