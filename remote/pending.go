package remote

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/proto"
)

// pendingCall is a Call or Request waiting for its reply. It is failed by
// the death of the path it was sent on (via) or of the incarnation. It is
// also what its caller waits on: it completes once (done), with the reply
// (inReply) or an error (fail), and then signals; the caller's ctx ending
// first claims it instead. One allocation per call: the outcome is kept
// in it, and the signal channel is recycled.
type pendingCall struct {
	via   path          // a native *link, or a *pubPool
	seq   atomic.Uint64 // native: the frame's sequence on its link, set under the link's lock
	state atomic.Int32  // pooled: callQueued, callSent or callAbandoned
	op    string
	tg    target
	start int64 // unix ns when it was made
	// sentOn is the pool link a pooled call was written to (set by the
	// proxy before the write), so a goodbye on that link can settle it.
	sentOn atomic.Pointer[link]

	done   atomic.Bool   // completed, or claimed by its caller
	signal chan struct{} // one slot: sent once the outcome is written
	// The outcome, written by whoever completed the call, before signal:
	// the result (decoded by the reader), or an error, or a large result's
	// bytes for the caller to decode.
	res   proto.Message
	err   error
	large *largeReply
}

// largeReply is a result over replyDecodeInline bytes, copied by the
// reader for the caller to decode on its own goroutine, so that the
// link's reader only copies bytes.
type largeReply struct {
	typ     string
	payload []byte
}

// replyDecodeInline is the largest result the reader decodes itself:
// below it decoding costs about what the copy would.
const replyDecodeInline = 1 << 10

// signals recycles the channels callers wait on: once a caller has
// received, nothing sends on its channel again (completion is once).
var signals = sync.Pool{New: func() any { return make(chan struct{}, 1) }}

func newPendingCall(op string, tg target, start int64) *pendingCall {
	return &pendingCall{op: op, tg: tg, start: start, signal: signals.Get().(chan struct{})}
}

// fail completes the call with err; false if it had completed already.
func (pc *pendingCall) fail(err error) bool {
	if !pc.done.CompareAndSwap(false, true) {
		return false
	}
	pc.err = err
	pc.signal <- struct{}{}
	return true
}

// wait blocks until the call completes or ctx ends; claimed reports that
// ctx ended first (the call is then complete, with no outcome).
func (pc *pendingCall) wait(ctx context.Context) (claimed bool) {
	if done := ctx.Done(); done == nil {
		<-pc.signal
	} else {
		select {
		case <-pc.signal:
		case <-done:
			if pc.done.CompareAndSwap(false, true) {
				signals.Put(pc.signal)
				return true
			}
			<-pc.signal // the outcome won: it is being written
		}
	}
	signals.Put(pc.signal)
	return false
}

const (
	callQueued    int32 = iota // in a proxy's mailbox
	callSent                   // claimed by its proxy for a write
	callAbandoned              // failed while queued: must never be written
)

// markSent claims a queued call for writing; false if it was abandoned.
func (pc *pendingCall) markSent() bool {
	return pc.state.CompareAndSwap(callQueued, callSent) || pc.state.Load() == callSent
}

// wasSent reports whether the call may have left this process. For a
// pooled call still queued it abandons the call, so its proxy will never
// write it: the answer "not sent" stays true.
func (pc *pendingCall) wasSent() bool { return pc.via.wasSent(pc) }

// failure is the error a pending call gets when its path or peer dies.
func (pc *pendingCall) failure(p *peer, reason error) error {
	if pc.wasSent() {
		return &actor.Error{Op: pc.op, Node: p.name, Incarnation: p.inc, Target: pc.tg.String(),
			Err: fmt.Errorf("%w (%v)", actor.ErrNodeDown, reason), Outcome: actor.MayHaveExecuted}
	}
	return &actor.Error{Op: pc.op, Node: p.name, Incarnation: p.inc, Target: pc.tg.String(),
		Err: fmt.Errorf("%w (%v)", actor.ErrNotSent, reason), Outcome: actor.NotExecuted}
}
