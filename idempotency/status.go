package idempotency

import (
	"context"
	"fmt"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/idempotencypb"
	"google.golang.org/protobuf/proto"
)

// StatusFunction is the name of the function Serve registers: callable
// from any node, it answers Status about the keys of the node's guard.
const StatusFunction = "mailroom.idempotency.status"

// Serve makes g's Status callable from other nodes (and from this one):
// it registers the function StatusFunction on sys and the types its
// callers send. One guard per node; call it before the node is reached,
// as for any function. Status is how a caller asks. Serving the guard
// sys serves already is nothing; another guard is an error.
func Serve(sys *actor.System, g *Guard) error {
	sv := actorhooks.Value(sys, servedKey{}, func() any { return &servedGuard{} }).(*servedGuard)
	sv.mu.Lock()
	defer sv.mu.Unlock()
	switch {
	case sv.g == g:
		return nil
	case sv.g != nil:
		return fmt.Errorf("idempotency: serve on %s: it serves another guard already (one guard per node)", sys.Name())
	}
	if err := sys.RegisterTypes(&idempotencypb.StatusRequest{}, &idempotencypb.StatusReply{}); err != nil {
		return err
	}
	err := sys.Register(StatusFunction, func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		req, ok := arg.(*idempotencypb.StatusRequest)
		if !ok {
			return nil, actor.Reject("bad_request", fmt.Sprintf("idempotency: status wants a StatusRequest, got %T", arg))
		}
		rec, err := g.status(req.GetKey(), req.GetIncarnation(), AttemptFrom(ctx))
		if err != nil {
			return nil, err // a rejection keeping its code: ErrRecordLost, ErrStoreFull, ErrBadKey
		}
		return &idempotencypb.StatusReply{
			State: int32(rec.State), Incarnation: rec.Inc, Reply: rec.Reply,
			Error: rec.Err, Code: rec.Code, Outcome: int32(rec.Outcome),
		}, nil
	})
	if err == nil {
		sv.g = g
	}
	return err
}

// servedKey keys, on a System, the guard Serve serves there.
type servedKey struct{}

type servedGuard struct {
	mu sync.Mutex // protects g
	g  *Guard
}

// Status asks the node peer (which runs Serve) what happened to key in
// the call its incarnation inc took (the Incarnation of the
// may-have-executed *actor.Error; 0: not known): Done (with the recorded
// reply or error), Running, Interrupted (a durable store kept the claim
// of an attempt whose incarnation ended: it may have done part of its
// work), or NeverRan, after which the key is fenced on peer up to the
// attempt ctx carries (WithAttempt; none: 0): a late copy of the call is
// refused there with ErrFenced, not executed, and the call may be made
// again with a higher attempt (on peer or another node). Pass the ctx
// the call was made with: its attempt is the one asked about.
//
// A peer whose store is in memory, asked about another incarnation than
// its own, answers an error matching ErrRecordLost (errors.Is): the
// record went with that incarnation and what the call did cannot be
// known from there. Other errors: ErrBadKey, ErrStoreFull (the fence
// could not be kept: ask again later), and the call's own (the peer is
// unreachable: not executed, ask again).
//
// Record.Reply holds the recorded reply in its stored form;
// Record.Result decodes it.
func Status(ctx context.Context, sys *actor.System, peer, key string, inc uint64) (Record, error) {
	if err := sys.RegisterTypes(&idempotencypb.StatusRequest{}, &idempotencypb.StatusReply{}); err != nil {
		return Record{}, err
	}
	res, err := sys.Call(ctx, peer, StatusFunction, &idempotencypb.StatusRequest{Key: key, Incarnation: inc})
	if err != nil {
		return Record{}, err
	}
	rep, ok := res.(*idempotencypb.StatusReply)
	if !ok {
		return Record{}, fmt.Errorf("idempotency: status of %q on %s: reply is %T, want a StatusReply", key, peer, res)
	}
	st := State(rep.GetState())
	switch st {
	case NeverRan, Running, Done, Interrupted:
	default:
		return Record{}, fmt.Errorf("idempotency: status of %q on %s: unknown state %d", key, peer, rep.GetState())
	}
	out := actor.Execution(rep.GetOutcome())
	if out < actor.Executed || out > actor.MayHaveExecuted {
		return Record{}, fmt.Errorf("idempotency: status of %q on %s: unknown outcome %d", key, peer, rep.GetOutcome())
	}
	return Record{State: st, Inc: rep.GetIncarnation(), Reply: rep.GetReply(), Err: rep.GetError(), Code: rep.GetCode(), Outcome: out}, nil
}

// Result is what a Done record gives a repeat of its key: the reply the
// handler returned (decoded from its stored form, nil when it returned
// none), or its error with its code and outcome (executed for a
// rejection or a panic, may have executed when it said so). For any
// other state it is an error.
func (r Record) Result() (proto.Message, error) {
	if r.State != Done {
		return nil, fmt.Errorf("idempotency: no result: the key is %v", r.State)
	}
	b, err := result(r)
	if err != nil {
		return nil, err
	}
	return decodeReply(b)
}
