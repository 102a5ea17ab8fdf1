package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
)

// host runs this node's activations.
type host struct {
	c *Cluster

	mu   sync.Mutex // protects following
	acts map[string]*activation
}

// activation is one grain running here (or being started).
type activation struct {
	kind, identity string
	ready          chan struct{} // closed once pid or err is set
	pid            actor.PID
	err            error
	lease          discovery.Lease // nil without leases
	ended          chan struct{}   // closed by the actor's Stopped
	endOnce        sync.Once
	handedOver     atomic.Bool // stopped by handOver, not a passivation
}

func (a *activation) end() { a.endOnce.Do(func() { close(a.ended) }) }

func newHost(c *Cluster) *host { return &host{c: c, acts: map[string]*activation{}} }

func grainKey(kind, identity string) string { return kind + "/" + identity }

// actorName is the registered name of an activation on its node.
func actorName(kind, identity string) string { return "grain/" + kind + "/" + identity }

func (h *host) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.acts)
}

// activate returns the activation of (kind, identity), starting it when
// this node owns it in its own view and, with leases, holds its lease.
// Every error is not executed: nothing ran.
func (h *host) activate(ctx context.Context, kind, identity string) (actor.PID, error) {
	c := h.c
	k := c.kinds[kind]
	if k == nil {
		return actor.PID{}, refusal(CodeNoKind, "cluster: node %s does not host kind %q", c.sys.Name(), kind)
	}
	key := grainKey(kind, identity)
	for {
		if c.stopping.Load() {
			return actor.PID{}, refusal(CodeStopping, "cluster: node %s is stopping", c.sys.Name())
		}
		if o, ok := c.view.owner(kind, identity); !ok || o.node != c.sys.Name() {
			c.stats.refusals.Add(1)
			return actor.PID{}, refusal(CodeNotOwner, "cluster: node %s is not the owner of %s (its view: %s)", c.sys.Name(), key, o.node)
		}
		h.mu.Lock()
		a := h.acts[key]
		if a == nil {
			a = &activation{kind: kind, identity: identity, ready: make(chan struct{}), ended: make(chan struct{})}
			h.acts[key] = a
			h.mu.Unlock()
			h.start(ctx, k, a)
		} else {
			h.mu.Unlock()
		}
		select {
		case <-a.ready:
		case <-ctx.Done():
			return actor.PID{}, actor.NotExecutedError(ctx.Err())
		}
		if a.err != nil {
			return actor.PID{}, a.err
		}
		select {
		case <-a.ended:
			// Passivated meanwhile: wait until its entry is gone, then
			// start anew.
			if err := h.waitGone(ctx, key, a); err != nil {
				return actor.PID{}, err
			}
			continue
		default:
		}
		return a.pid, nil
	}
}

// waitGone waits until a is no longer the entry of key.
func (h *host) waitGone(ctx context.Context, key string, a *activation) error {
	for {
		h.mu.Lock()
		cur := h.acts[key]
		h.mu.Unlock()
		if cur != a {
			return nil
		}
		t := time.NewTimer(time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return actor.NotExecutedError(ctx.Err())
		}
	}
}

// start takes the lease and spawns the activation a; it closes a.ready.
// On failure the entry goes at once.
func (h *host) start(ctx context.Context, k *Kind, a *activation) {
	c := h.c
	fail := func(err error) {
		a.err = err
		h.mu.Lock()
		if h.acts[grainKey(a.kind, a.identity)] == a {
			delete(h.acts, grainKey(a.kind, a.identity))
		}
		h.mu.Unlock()
		close(a.ready)
	}
	if c.leaser != nil {
		ls, err := c.leaser.Acquire(ctx, "grain/"+grainKey(a.kind, a.identity))
		switch {
		case errors.Is(err, discovery.ErrLeaseHeld):
			c.stats.leaseBusy.Add(1)
			fail(refusal(CodeLeaseHeld, "cluster: %s: %v", grainKey(a.kind, a.identity), err))
			return
		case errors.Is(err, discovery.ErrLeaseLost), errors.Is(err, discovery.ErrStopped):
			fail(refusal(CodeStopping, "cluster: node %s can no longer hold leases: %v", c.sys.Name(), err))
			return
		case err != nil:
			fail(actor.NotExecutedError(fmt.Errorf("cluster: lease of %s: %w", grainKey(a.kind, a.identity), err)))
			return
		}
		c.stats.leasesAcquired.Add(1)
		a.lease = ls
	} else if err := h.handoff(ctx, a); err != nil {
		fail(err)
		return
	}
	props := h.props(k, a)
	pid, err := c.sys.SpawnNamed(props, actorName(a.kind, a.identity))
	if err != nil {
		if a.lease != nil {
			h.release(a)
		}
		fail(actor.NotExecutedError(fmt.Errorf("cluster: activating %s: %w", grainKey(a.kind, a.identity), err)))
		return
	}
	a.pid = pid
	c.stats.activations.Add(1)
	c.wg.Add(1)
	go h.watch(a)
	close(a.ready)
	// A view change while it started found it not running yet
	// (handOver looks at started activations only): look again now.
	if !h.owns(a) {
		if !a.handedOver.Swap(true) {
			c.stats.handovers.Add(1)
		}
		c.sys.StopActor(a.pid)
	}
}

// owns reports whether this node owns a's identity in its view.
func (h *host) owns(a *activation) bool {
	o, ok := h.c.view.owner(a.kind, a.identity)
	return ok && o.node == h.c.sys.Name()
}

// props wraps the kind's props: the idle timeout passivates, a lease
// no longer valid refuses and stops, Stopped ends the activation.
func (h *host) props(k *Kind, a *activation) *actor.Props {
	p := *k.Props(a.identity)
	if k.IdleTimeout > 0 {
		p.ReceiveTimeout = k.IdleTimeout
	}
	mw := func(next actor.ReceiveFunc) actor.ReceiveFunc {
		return func(ctx *actor.Context) {
			switch ctx.Message().(type) {
			case actor.Started, actor.Stopping, actor.Restarting:
				next(ctx)
			case actor.Stopped:
				next(ctx)
				a.end()
			case actor.ReceiveTimeout:
				next(ctx)
				if k.IdleTimeout > 0 {
					ctx.Stop(ctx.Self()) // counted as a passivation in watch
				}
			default:
				if a.lease != nil && !a.lease.Valid() {
					// Not ours any more (or maybe not): handle nothing.
					h.c.stats.refusals.Add(1)
					ctx.RespondError(refusal(CodeNotOwner, "cluster: %s: the owner lease of node %s is lost", grainKey(a.kind, a.identity), h.c.sys.Name()))
					ctx.Stop(ctx.Self())
					return
				}
				next(ctx)
			}
		}
	}
	p.ReceiveMiddleware = append([]actor.ReceiveMiddleware{mw}, p.ReceiveMiddleware...)
	return &p
}

// watch waits for a's end (the actor stopped) or its lease's loss (then
// it stops the actor first, and says so), then gives the lease back and
// drops the entry.
func (h *host) watch(a *activation) {
	c := h.c
	defer c.wg.Done()
	var lost <-chan struct{}
	if a.lease != nil {
		lost = a.lease.Lost()
	}
	select {
	case <-a.ended:
		if !a.handedOver.Load() && !c.stopping.Load() {
			c.stats.passivations.Add(1) // idle, or the grain stopped itself
		}
	case <-lost:
		if !c.stopping.Load() {
			c.stats.leasesLost.Add(1)
			c.log.Error("cluster: owner lease lost; stopping the activation before another node can take it",
				"kind", a.kind, "identity", a.identity, "pid", a.pid.String())
		}
	}
	// Blocks until the actor has ended (it may be in a handler).
	_ = c.sys.StopActorWait(context.Background(), a.pid)
	if a.lease != nil {
		h.release(a)
	}
	a.end()
	h.mu.Lock()
	if h.acts[grainKey(a.kind, a.identity)] == a {
		delete(h.acts, grainKey(a.kind, a.identity))
	}
	h.mu.Unlock()
}

func (h *host) release(a *activation) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.lease.Release(ctx); err != nil {
		h.c.log.Warn("cluster: releasing an owner lease failed (it ends with our session anyway)", "kind", a.kind, "identity", a.identity, "err", err)
	}
}

// running lists the activations that have started.
func (h *host) running() []*activation {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*activation, 0, len(h.acts))
	for _, a := range h.acts {
		select {
		case <-a.ready:
			if a.err == nil {
				out = append(out, a)
			}
		default:
		}
	}
	return out
}

// handOver stops the activations this node no longer owns in its view.
// Their queued requests fail as not executed (actor.ErrNoProcess) and
// their senders retry on the new owner.
func (h *host) handOver() {
	for _, a := range h.running() {
		if !h.owns(a) {
			if !a.handedOver.Swap(true) {
				h.c.stats.handovers.Add(1)
			}
			h.c.sys.StopActor(a.pid)
		}
	}
}

// stopAll stops every activation and waits for each.
func (h *host) stopAll(ctx context.Context) error {
	var errs []error
	for _, a := range h.running() {
		if err := h.c.sys.StopActorWait(ctx, a.pid); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
