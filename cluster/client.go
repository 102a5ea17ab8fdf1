package cluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/actor/pidpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// placementCache maps a grain to the PID of its activation. An entry is
// used only while its node incarnation is still the owner in the view,
// so a membership change needs no sweep. Bounded: at the bound an
// arbitrary entry makes room.
type placementCache struct {
	max int

	mu sync.RWMutex // protects following
	m  map[string]actor.PID
}

func newPlacementCache(max int) *placementCache {
	return &placementCache{max: max, m: map[string]actor.PID{}}
}

func (p *placementCache) get(key string) (actor.PID, bool) {
	p.mu.RLock()
	pid, ok := p.m[key]
	p.mu.RUnlock()
	return pid, ok
}

func (p *placementCache) put(key string, pid actor.PID) {
	if p.max == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.m[key]; !ok && len(p.m) >= p.max {
		for k := range p.m {
			delete(p.m, k)
			break
		}
	}
	p.m[key] = pid
}

// drop removes key if it still maps to pid.
func (p *placementCache) drop(key string, pid actor.PID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m[key] == pid {
		delete(p.m, key)
	}
}

// Backoff of the retries while the owner lease is held by the previous
// activation (it ends with its node's TTL, or its handover).
const (
	leaseRetryMin = 20 * time.Millisecond
	leaseRetryMax = 250 * time.Millisecond
)

// resolve returns the PID of the activation of (kind, identity): from the
// cache while its incarnation owns the grain, else by asking the owner
// to activate it. A lease still held elsewhere is waited for, until ctx
// ends; a "not the owner" answer is retried once after the view moved,
// or returned. Every error is not executed.
func (c *Cluster) resolve(ctx context.Context, kind, identity string) (actor.PID, error) {
	if err := validIdentity(identity); err != nil {
		return actor.PID{}, actor.NotExecutedError(fmt.Errorf("%w: %w", actor.ErrBadMessage, err))
	}
	key := grainKey(kind, identity)
	o, ok := c.view.owner(kind, identity)
	if !ok {
		return actor.PID{}, actor.NotExecutedError(fmt.Errorf("%w: kind %q, identity %q (node %s's view)", ErrNoOwner, kind, identity, c.sys.Name()))
	}
	if pid, hit := c.cache.get(key); hit && pid.Node == o.node && pid.Incarnation == o.incarnation {
		c.stats.cacheHits.Add(1)
		return pid, nil
	}
	c.stats.cacheMisses.Add(1)
	backoff := leaseRetryMin
	refused := false
	for {
		pid, err := c.activateOn(ctx, o, kind, identity)
		if err == nil {
			c.cache.put(key, pid)
			return pid, nil
		}
		wait := false
		switch code := actor.ErrorCode(err); {
		case code == CodeLeaseHeld, code == CodeHandoffPending, code == CodeStopping:
			// The old activation has not ended yet, or the owner is
			// leaving (or lost its leases): our view moves on soon.
			wait = true
		case code == CodeNotOwner && !refused:
			refused = true
			c.stats.refusalsSeen.Add(1)
		case errors.Is(err, actor.ErrUnreachable), errors.Is(err, actor.ErrNodeDown), errors.Is(err, actor.ErrNotSent):
			// The owner in our view is gone or going, and our view has
			// not heard yet: wait for it to.
			wait = true
		default:
			return actor.PID{}, asNotExecuted(err)
		}
		if wait {
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return actor.PID{}, fmt.Errorf("cluster: activating %s: %w (last: %w)", key, actor.NotExecutedError(ctx.Err()), asNotExecuted(err))
			}
			backoff = min(2*backoff, leaseRetryMax)
		}
		if o, ok = c.view.owner(kind, identity); !ok {
			return actor.PID{}, actor.NotExecutedError(fmt.Errorf("%w: kind %q, identity %q (node %s's view)", ErrNoOwner, kind, identity, c.sys.Name()))
		}
	}
}

// activateOn asks owner o to activate the grain (this node: directly).
func (c *Cluster) activateOn(ctx context.Context, o candidate, kind, identity string) (actor.PID, error) {
	if o.node == c.sys.Name() {
		return c.hosted.activate(ctx, kind, identity)
	}
	res, err := actor.CallAs[*pidpb.PID](ctx, c.sys, o.node, activateFn, wrapperspb.String(grainKey(kind, identity)))
	if err != nil {
		return actor.PID{}, err
	}
	return res.PID(), nil
}

// retryable: the message reached no activation (it was passivated or
// handed over, or its node refused it): safe to resolve and send again.
func retryable(err error) bool {
	return actor.Outcome(err) == actor.NotExecuted &&
		(errors.Is(err, actor.ErrNoProcess) || actor.ErrorCode(err) == CodeNotOwner ||
			errors.Is(err, actor.ErrUnreachable) || errors.Is(err, actor.ErrNotSent))
}

// asNotExecuted: whatever failed while activating, the message was not
// sent.
func asNotExecuted(err error) error {
	if actor.Outcome(err) == actor.NotExecuted {
		return err
	}
	return actor.NotExecutedError(err)
}

// Request sends msg to the grain (kind, identity) from caller (an actor's
// Context, a Sender handle, or the System) and waits for its answer
// (Context.Respond), activating the grain on its owner first when needed.
// A message that reached no activation (a stale placement: the grain was
// passivated or moved, or the node answered "not the owner") is retried
// once, transparently: it did not run. Errors keep mailroom's outcomes:
// a call pinned to an activation whose node dies fails at once as may
// have executed (actor.ErrNodeDown).
func (c *Cluster) Request(ctx context.Context, caller actor.Caller, kind, identity string, msg any) (any, error) {
	for attempt := 0; ; attempt++ {
		pid, err := c.resolve(ctx, kind, identity)
		if err != nil {
			return nil, err
		}
		v, err := caller.Request(ctx, pid, msg)
		if err != nil && attempt == 0 && retryable(err) {
			c.cache.drop(grainKey(kind, identity), pid)
			c.stats.refusalsSeen.Add(1)
			continue
		}
		return v, err
	}
}

// Send delivers msg to the grain (kind, identity), fire and forget, after
// activating it when needed (so it waits for the activation; the error is
// that of the activation, not executed). Messages from one caller to one
// activation arrive in order. A message that reaches an activation as it
// passivates is a dead letter (counted, never silent): use Request when
// the sender must know.
func (c *Cluster) Send(ctx context.Context, caller actor.Caller, kind, identity string, msg any) error {
	pid, err := c.resolve(ctx, kind, identity)
	if err != nil {
		return err
	}
	caller.Send(pid, msg)
	return nil
}

// PID returns the PID of the activation of (kind, identity), activating
// it when needed. The PID is pinned to that activation: messages to it
// fail (not executed) once the grain is passivated or moved.
func (c *Cluster) PID(ctx context.Context, kind, identity string) (actor.PID, error) {
	return c.resolve(ctx, kind, identity)
}

// RequestAs is c.Request with the answer typed (as actor.RequestAs).
func RequestAs[T any](ctx context.Context, c *Cluster, caller actor.Caller, kind, identity string, msg any) (T, error) {
	v, err := c.Request(ctx, caller, kind, identity, msg)
	var zero T
	if err != nil {
		return zero, err
	}
	if r, ok := v.(T); ok || v == nil {
		return r, nil
	}
	return zero, &actor.Error{Op: "request", Target: "grain " + grainKey(kind, identity),
		Err: fmt.Errorf("%w: got %T, want %s", actor.ErrReplyType, v, reflect.TypeFor[T]()), Outcome: actor.Executed}
}

// IdentityOf is the kind and identity of the grain whose actor c is; ok
// is false for an actor that is not an activation.
func IdentityOf(c *actor.Context) (kind, identity string, ok bool) {
	name := c.Name()
	const prefix = "grain/"
	if len(name) <= len(prefix) || name[:len(prefix)] != prefix {
		return "", "", false
	}
	rest := name[len(prefix):]
	for i := 0; i < len(rest); i++ {
		if rest[i] == '/' {
			return rest[:i], rest[i+1:], true
		}
	}
	return "", "", false
}
