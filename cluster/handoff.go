package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The handover without leases (Static).
//
// When a node joins, the identities that now hash to it were owned by
// the node that is the runner-up in the newcomer's view (rendezvous: the
// owner among the others). Before its first activation of an identity,
// the new owner asks that node to hand it off: the previous owner
// answers once it has no activation of the identity (it stops the one it
// has: the message it is handling finishes, those queued behind fail as
// not executed, actor.ErrNoProcess, and their senders retry on the new
// owner), or refuses with CodeHandoffPending while the newcomer is not
// the owner in its own view yet. Meanwhile the messages for the identity
// wait on the new owner, each an activation call held there (as many as
// the remote layer lets a peer have in flight), for at most
// handoffTimeout; after it, or on a refusal, they are refused as not
// executed (CodeHandoffPending) and their senders retry until their ctx
// ends. A previous owner that is gone or unreachable holds nothing that
// can still run in the newcomer's view of the cluster: the new owner
// goes ahead.
//
// Cost: one call to one node per activation, whatever the cluster's
// size; nothing per join. With leases there is no handoff call: the lease
// orders the two activations, and the old owner, seeing the new one in
// its view, stops its activation and releases the lease at once.

// handoffFn is the function every node registers to hand an identity off.
const handoffFn = "mailroom.cluster.handoff"

// handoffTimeout bounds how long a new owner waits for the previous one.
const handoffTimeout = 2 * time.Second

// CodeHandoffPending: the identity's previous owner has not handed it off
// yet (its view does not make the asking node the owner yet, or it did
// not answer in time). Not executed; the sender retries until its ctx
// ends.
const CodeHandoffPending = "handoff_pending"

// handoff asks the previous owner of a (in this node's view) to stop its
// activation of a, before a starts here. nil: go ahead.
func (h *host) handoff(ctx context.Context, a *activation) error {
	c := h.c
	prev, ok := c.view.previous(a.kind, a.identity)
	if !ok {
		return nil
	}
	key := grainKey(a.kind, a.identity)
	ctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	defer cancel()
	_, err := c.sys.Call(ctx, prev.node, handoffFn, wrapperspb.String(key+" "+c.sys.Name()))
	switch {
	case err == nil:
		c.stats.handoffs.Add(1)
		return nil
	case errors.Is(err, actor.ErrNodeDown), errors.Is(err, actor.ErrUnreachable), errors.Is(err, actor.ErrNotSent),
		errors.Is(err, actor.ErrNoFunction):
		// Gone, or cut off in a way our view has not caught up with:
		// nothing it holds can be reached from here.
		c.stats.handoffs.Add(1)
		return nil
	case actor.ErrorCode(err) == CodeHandoffPending:
		return refusal(CodeHandoffPending, "cluster: %s: node %s has not handed it off yet: %v", key, prev.node, err)
	default:
		return refusal(CodeHandoffPending, "cluster: %s: no handoff from node %s: %v", key, prev.node, err)
	}
}

// handleHandoff is the handoff function: arg is "kind/identity asker".
func (c *Cluster) handleHandoff(ctx context.Context, arg proto.Message) (proto.Message, error) {
	s, ok := arg.(*wrapperspb.StringValue)
	if !ok {
		return nil, actor.NotExecutedError(fmt.Errorf("%w: cluster handoff takes a StringValue, got %T", actor.ErrBadMessage, arg))
	}
	key, asker, _ := strings.Cut(s.Value, " ")
	kind, identity, ok := strings.Cut(key, "/")
	if !ok || asker == "" {
		return nil, actor.NotExecutedError(fmt.Errorf("%w: cluster handoff of %q: want kind/identity asker", actor.ErrBadMessage, s.Value))
	}
	if c.kinds[kind] == nil {
		return &wrapperspb.StringValue{Value: "none"}, nil
	}
	if o, ok := c.view.owner(kind, identity); ok && o.node == c.sys.Name() {
		return nil, refusal(CodeHandoffPending, "cluster: node %s still owns %s in its view (node %s asked)", c.sys.Name(), key, asker)
	}
	// Not ours in our view: no activation starts here any more (activate
	// checks the view first); stop the one there is, and wait for it.
	h := c.hosted
	h.mu.Lock()
	a := h.acts[key]
	h.mu.Unlock()
	if a == nil {
		return &wrapperspb.StringValue{Value: "none"}, nil
	}
	select {
	case <-a.ready:
	case <-ctx.Done():
		return nil, actor.NotExecutedError(ctx.Err())
	}
	if a.err == nil {
		c.sys.StopActor(a.pid)
		select {
		case <-a.ended:
		case <-ctx.Done():
			return nil, actor.NotExecutedError(ctx.Err())
		}
	}
	if err := h.waitGone(ctx, key, a); err != nil {
		return nil, err
	}
	return &wrapperspb.StringValue{Value: "stopped"}, nil
}
