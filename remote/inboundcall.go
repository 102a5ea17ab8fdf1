package remote

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"google.golang.org/protobuf/proto"
)

// inboundCall is one call a peer made, admitted to run here: all its run
// needs, its admission ticket and its context in one allocation, run by a
// worker (callworkers.go).
type inboundCall struct {
	n   *Node
	l   *link
	id  uint64
	fn  string
	h   actor.Handler
	msg proto.Message
	ctr *atomic.Int64 // calls of fn running (Stats)
	t   ticket        // its share of the peer's admission (admission.go)
	ctx callCtx
}

func (l *link) newInboundCall(id uint64, fn string, h actor.Handler, msg proto.Message, size int64, deadline int64) *inboundCall {
	c := &inboundCall{n: l.node, l: l, id: id, fn: fn, h: h, msg: msg}
	c.t.a, c.t.size = l.peer.adm, size
	if deadline != 0 {
		c.ctx.deadline = time.Unix(0, deadline)
	}
	return c
}

// run runs the handler and hands its reply on; the ticket goes back
// with the reply (sendReply).
func (c *inboundCall) run() {
	n, l := c.n, c.l
	res, err := actorhooks.RunHandler(n.sys, &c.ctx, "call", c.fn, c.h, c.msg)
	if c.ctx.tr != nil {
		endSpan(c.ctx.tr.span, err)
	}
	c.msg = nil
	l.peer.running.untrack(c)
	c.t.replying()
	l.sendReply(c.id, res, err, &c.t)
	l.owed.Add(-1)
	c.ctr.Add(-1)
	c.ctx.cancel(context.Canceled) // the handler has returned
	n.running.Done()
}
