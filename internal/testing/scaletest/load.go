package scaletest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/actor/pidpb"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
)

// startLoad starts the streams toward every target, once.
func (c *child) startLoad() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.phase != "" && c.phase != "idle" {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.phase, c.cancel = "load", cancel
	var wg sync.WaitGroup
	for target, st := range c.stats {
		streams := []struct {
			rate float64
			f    func(context.Context, string, *targetStats)
		}{
			{c.load.CallsPerSec, c.callOnce},
			{c.load.RequestsPerSec, c.requestStream()},
			{c.load.SendsPerSec, c.sendStream(target)},
		}
		for _, s := range streams {
			if s.rate <= 0 {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				paced(ctx, s.rate, func() { s.f(ctx, target, st) })
			}()
		}
		for range c.load.Holders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.hold(ctx, target, st)
			}()
		}
	}
	go func() {
		wg.Wait()
		c.mu.Lock()
		c.phase = "stopped"
		c.mu.Unlock()
	}()
}

// stopLoad stops making new operations and cancels the holders; calls
// and requests already made end by themselves (they have no ctx that
// could end them: liveness must).
func (c *child) stopLoad() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.phase != "load" {
		return
	}
	c.phase = "stopping"
	c.cancel()
}

// paced runs f rate times a second until ctx ends. A slow f delays the
// next run rather than piling runs up.
func paced(ctx context.Context, rate float64, f func()) {
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// callOnce calls scale_whoami on target by name. The answer names the
// incarnation that ran it: one this node had already seen go before
// the call began must not answer.
func (c *child) callOnce(_ context.Context, target string, st *targetStats) {
	start := time.Now().UnixMilli()
	id := c.ops.begin(target, opCall, 0)
	reply, err := c.sys.NewSender().Call(context.Background(), target, fnWhoami, &testpb.Echo{})
	c.ops.end(id)
	cl := c.record(st, opCall, err)
	if cl != clOK {
		return
	}
	e, ok := reply.(*testpb.Echo)
	if !ok {
		c.noteUnexpected("call", fmt.Errorf("%s answered with a %T", target, reply))
		return
	}
	inc := e.Text
	if c.view.goneBefore(target, inc, start) {
		st.wrong.Add(1)
		c.noteUnexpected("call", fmt.Errorf("%s answered by incarnation %s, seen gone before the call began", target, inc))
	}
}

// requestStream returns a stream of requests to the PID of the target's
// ident actor: the PID names an incarnation, and only that incarnation
// may answer. When a request fails as the incarnation is gone, the next
// run learns the PID anew.
func (c *child) requestStream() func(context.Context, string, *targetStats) {
	s := c.sys.NewSender()
	var pid actor.PID // owned by the stream's goroutine
	return func(_ context.Context, target string, st *targetStats) {
		if pid.IsZero() {
			id := c.ops.begin(target, opResolve, 0)
			reply, err := s.Call(context.Background(), target, fnIdent, &testpb.Echo{})
			c.ops.end(id)
			if c.record(st, opResolve, err) != clOK {
				return
			}
			p, ok := reply.(*pidpb.PID)
			if !ok {
				c.noteUnexpected("resolve", fmt.Errorf("%s answered with a %T", target, reply))
				return
			}
			pid = p.PID()
			if pid.Node != target {
				st.wrong.Add(1)
				c.noteUnexpected("resolve", fmt.Errorf("asked %s for its ident actor, got %v", target, pid))
				pid = actor.PID{}
				return
			}
		}
		id := c.ops.begin(target, opRequest, pid.Incarnation)
		reply, err := s.Request(context.Background(), pid, &testpb.Echo{})
		c.ops.end(id)
		switch cl := c.record(st, opRequest, err); cl {
		case clOK:
			e, ok := reply.(*testpb.Echo)
			switch {
			case !ok:
				c.noteUnexpected("request", fmt.Errorf("%v answered with a %T", pid, reply))
			case e.Text != hexInc(pid.Incarnation):
				st.wrong.Add(1)
				c.noteUnexpected("request", fmt.Errorf("a request to %v was answered by incarnation %s", pid, e.Text))
			}
		case clNodeDown, clNotSent, clUnreachable, clNoProcess:
			pid = actor.PID{}
		}
	}
}

// sendStream returns a stream of numbered sends to the target's sink,
// from one sender handle (so they arrive in order).
func (c *child) sendStream(target string) func(context.Context, string, *targetStats) {
	s := c.sys.NewSender()
	key := c.sys.Name() + "/" + c.inc + "->" + target
	var seq int64
	return func(_ context.Context, target string, st *targetStats) {
		seq++
		s.SendNamed(target, actSink, &testpb.Echo{N: seq, From: key})
		st.sent.Add(1)
	}
}

// hold keeps a call of scale_hold open on target until ctx ends. A hold
// that ends otherwise (its incarnation went) is recorded, and made again
// half a second later.
func (c *child) hold(ctx context.Context, target string, st *targetStats) {
	s := c.sys.NewSender()
	for ctx.Err() == nil {
		start := time.Now().UnixMilli()
		id := c.ops.begin(target, opHold, 0)
		_, err := s.Call(ctx, target, fnHold, &testpb.Echo{})
		c.ops.end(id)
		cl := c.record(st, opHold, err)
		st.holdEnded(start, time.Now().UnixMilli(), cl)
		t := time.NewTimer(500 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// record counts how an operation ended and returns its class.
func (c *child) record(st *targetStats, k opKind, err error) class {
	cl := classify(err)
	st.count(k, cl)
	if cl == clOther {
		c.noteUnexpected(k.String(), err)
	}
	return cl
}

// hexInc is an incarnation as the nodes print it.
func hexInc(inc uint64) string { return strconv.FormatUint(inc, 16) }
