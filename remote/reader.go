package remote

import (
	"errors"
	"fmt"
	"io"

	"github.com/mailroom-go/mailroom/internal/wire"
)

// A link's reader reads frames and dispatches them on one goroutine. A
// call normally runs on a worker (callworkers.go), and handing it there
// wakes another goroutine: on an idle path that wake-up is a good part
// of a round trip. So a call that is alone in its frame (a lone caller's)
// runs on the goroutine that read it, which writes its reply too (an
// idle proxy is written by its caller, pool.go): the reader role moves
// to a worker first, and the former reader becomes a worker once the
// call is done. Under load frames carry many calls, which go to workers
// as before.

// linkReader is the reader role of one link: whichever goroutine holds
// it reads and dispatches the link's frames.
type linkReader struct {
	l        *link
	fr       *wire.FrameReader
	dispatch func(*link, wire.Kind, []byte) error
}

func (l *link) readLoop(dispatch func(*link, wire.Kind, []byte) error) {
	n := l.node
	r := &linkReader{l: l, dispatch: dispatch}
	r.fr = wire.NewFrameReader(countingReader{l}, n.cfg.Limits.MaxFrameSize)
	if n.readBudget != nil {
		r.fr.Budgeted(&linkBudget{rb: n.readBudget, w: readWait{
			abort: l.closedCh, patience: n.cfg.window(), busy: &l.dispatching,
			waits: &n.stats.readWaits, timeouts: &n.stats.budgetTimeouts,
		}})
	}
	if c := r.read(); c != nil {
		n.workers.adopt(c) // the role went on: run the call, then serve as a worker
	}
}

// run holds the role on a worker; a lone call it hands back runs on
// that worker next (counted as a call: see workerPool.close).
func (r *linkReader) run() {
	if c := r.read(); c != nil {
		wp := &r.l.node.workers
		wp.calls.Add(1)
		c.run()
		wp.calls.Add(-1)
	}
}

// read reads and dispatches frames until the link ends (nil), or until
// a lone call is to run on this goroutine: the role has then gone to a
// worker, and the call is returned.
func (r *linkReader) read() *inboundCall {
	l := r.l
	for {
		k, body, err := r.fr.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && l.writeClosed() {
				err = errLinkClosed // the end of a lingering close
			}
			if isWireError(err) {
				l.node.stats.badFrames.Add(1)
				err = fmt.Errorf("bad input: %w", err)
			}
			r.end(readErr(err))
			return nil
		}
		l.stats.bytesIn.Add(uint64(len(body) + wire.FrameHeader + 1))
		l.node.stats.bytesIn.Add(uint64(len(body) + wire.FrameHeader + 1))
		l.node.stats.framesIn.Add(1)
		l.handling.Store(true) // liveness: busy on this frame, not silent
		err = r.dispatch(l, k, body)
		l.handling.Store(false)
		if k == wire.KindPing || k == wire.KindPong {
			l.reads.Add(1)
		} else {
			l.dataIn.Add(1) // one counter per frame either way (idle.go)
		}
		c := l.inline
		l.inline = nil
		if err != nil {
			if c != nil {
				l.node.workers.run(c) // admitted before the bad input: it runs
			}
			r.end(err)
			return nil
		}
		if c != nil {
			l.node.workers.run(r)
			return c
		}
	}
}

// end ends the role: the link closes.
func (r *linkReader) end(reason error) {
	r.l.close(reason)
	r.fr.Release()
	r.l.wg.Done()
}
