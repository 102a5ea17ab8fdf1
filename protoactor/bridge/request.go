package bridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
)

// Send delivers msg to the protoactor process pid, on this node or
// another, from outside any protoactor actor: how a mailroom actor or
// function reaches a protoactor actor. It never blocks on the target.
func (b *Bridge) Send(pid *actor.PID, msg proto.Message) { b.pas.Root.Send(pid, msg) }

// Request sends msg to the protoactor process pid and waits for its
// answer (the target answers with Context.Respond), like mailroom's own
// Request: there is no default timeout; it ends with the answer, when ctx
// ends, or with a mailroom error the moment the node incarnation that
// took it is gone (actor.ErrNodeDown, may have executed). A target that
// does not exist is actor.ErrNoProcess (not executed).
func (b *Bridge) Request(ctx context.Context, pid *actor.PID, msg proto.Message) (proto.Message, error) {
	node, inc := b.self.node, b.self.inc
	if a, ok := parseAddress(pid.Address); ok {
		node, inc = a.node, a.inc
	}
	target := describe(pid)
	if err := ctx.Err(); err != nil {
		return nil, newError("request", node, inc, target, err)
	}
	f := actor.NewFuture(b.pas, -1) // no timer: ctx bounds the wait
	done := make(chan struct{})
	pipePID, remove := b.newPipe(func() { close(done) })
	defer remove()
	f.PipeTo(pipePID)
	b.pas.Root.RequestWithCustomSender(pid, msg, f.PID())
	select {
	case <-done:
	case <-ctx.Done():
		b.pas.Root.Stop(f.PID()) // completes the future if nothing else did
		<-done
		if res, err := f.Result(); err != nil || res != nil {
			return resultOf(node, inc, target, res, err)
		}
		return nil, mayHaveExecuted(newError("request", node, inc, target, ctx.Err()))
	}
	res, err := f.Result()
	return resultOf(node, inc, target, res, err)
}

// Result is a protoactor future's result with a failure the bridge
// delivered as its result (a mailroom error: node loss, unregistered
// type, ...) moved to the error, so callers check one error:
//
//	res, err := bridge.Result(ctx.RequestFuture(pid, msg, 5*time.Second))
func Result(f *actor.Future) (any, error) {
	res, err := f.Result()
	if e, ok := res.(error); ok && err == nil {
		return nil, e
	}
	return res, err
}

// resultOf maps a future's outcome to Request's.
func resultOf(node string, inc uint64, target string, res any, err error) (proto.Message, error) {
	switch {
	case errors.Is(err, actor.ErrDeadLetter):
		return nil, newError("request", node, inc, target, noSuchProcessReason())
	case err != nil:
		return nil, mayHaveExecuted(newError("request", node, inc, target, err))
	}
	switch r := res.(type) {
	case error:
		return nil, r
	case proto.Message:
		return r, nil
	case nil:
		return nil, newError("request", node, inc, target, noSuchProcessReason())
	}
	return nil, executedBadReply(node, inc, target, fmt.Errorf("%T is not a proto.Message", res))
}
