package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/nodename"
	"google.golang.org/protobuf/proto"
)

// Singleton is an actor of which the cluster runs one activation, on one
// of the nodes that host it, started without waiting for a message and
// moved when its owner goes.
//
// A singleton is a grain of a kind of its own ("singleton.<Name>") with
// one fixed identity, so it has everything a grain has: the owner is the
// rendezvous owner over the live incarnations that host it, and with a
// discovery.Leaser (Consul) it runs only under its owner lease, so two
// incarnations never run it at once, even across a partition; without
// leases (Static) at most one runs while the nodes' views agree (the
// window is in docs/CLUSTER.md). Unlike a grain it is never passivated:
// the owner starts it as soon as it owns it and holds its lease, and
// starts it again (after a backoff) if it stops.
type Singleton struct {
	// Name names the singleton cluster-wide: 1 to 118 letters, digits,
	// '.', '_' or '-' (the node name rule, less the kind's prefix).
	Name string
	// Props makes the props of an activation. Required.
	Props func() *actor.Props
}

// singletonPrefix starts the kind name of a singleton; no Kind may start
// with it.
const singletonPrefix = "singleton."

// singletonID is the one identity of a singleton's kind.
const singletonID = "singleton"

func singletonKind(name string) string { return singletonPrefix + name }

// Restart backoff of a singleton that stopped while its node still owns
// it (it stopped itself, or failed for good).
const (
	singletonRestartMin = 20 * time.Millisecond
	singletonRestartMax = time.Second
)

// singletonKinds validates the singletons of cfg and adds their kinds to
// c.kinds; it returns the kind names.
func (c *Cluster) singletonKinds(ss []Singleton) ([]string, error) {
	var names []string
	for i, s := range ss {
		kind := singletonKind(s.Name)
		switch {
		case s.Name == "" || !nodename.Valid(kind):
			return nil, fmt.Errorf("cluster: Config.Singletons[%d].Name %q: want 1-%d letters, digits, '.', '_' or '-'", i, s.Name, 128-len(singletonPrefix))
		case c.kinds[kind] != nil:
			return nil, fmt.Errorf("cluster: Config.Singletons[%d]: singleton %q listed twice", i, s.Name)
		case s.Props == nil:
			return nil, fmt.Errorf("cluster: Config.Singletons[%d] (%s): Props is nil", i, s.Name)
		}
		props := s.Props
		c.kinds[kind] = &Kind{Name: kind, Props: func(string) *actor.Props { return props() }}
		names = append(names, kind)
	}
	return names, nil
}

// keeper runs the singletons this node hosts: one goroutine per
// singleton starts it while this node owns it (in its view, and under
// the lease when there are leases) and waits for it to end or for the
// view to change.
type keeper struct {
	c      *Cluster
	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex    // protects following
	changed chan struct{} // closed (and replaced) when the view changes
}

// newKeeper makes the keeper before the cluster's hooks are in (they
// tell it of view changes); start starts it once the kinds are announced.
func newKeeper(c *Cluster) *keeper {
	k := &keeper{c: c, changed: make(chan struct{})}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	return k
}

func (k *keeper) start(kinds []string) {
	for _, kind := range kinds {
		k.wg.Add(1)
		go k.run(kind)
	}
}

// viewChanged wakes every singleton's goroutine.
func (k *keeper) viewChanged() {
	k.mu.Lock()
	close(k.changed)
	k.changed = make(chan struct{})
	k.mu.Unlock()
}

func (k *keeper) changes() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.changed
}

// stop ends the goroutines and waits for them; the activations stop with
// the cluster's others.
func (k *keeper) stop() {
	k.cancel()
	k.wg.Wait()
}

func (k *keeper) run(kind string) {
	defer k.wg.Done()
	c := k.c
	key := grainKey(kind, singletonID)
	restart := singletonRestartMin // after it stopped while owned
	retry := leaseRetryMin         // while its start is refused
	for {
		changed := k.changes() // before the view is read: no change is missed
		var ended <-chan struct{}
		var started time.Time
		var wait time.Duration
		if o, ok := c.view.owner(kind, singletonID); ok && o.node == c.sys.Name() && !c.stopping.Load() {
			_, err := c.hosted.activate(k.ctx, kind, singletonID)
			if k.ctx.Err() != nil {
				return
			}
			if a := c.hosted.entry(key); err == nil && a != nil {
				ended, started, retry = a.ended, time.Now(), leaseRetryMin
			} else {
				if err != nil && actor.ErrorCode(err) != CodeLeaseHeld {
					c.log.Warn("cluster: starting a singleton failed; retrying", "singleton", strings.TrimPrefix(kind, singletonPrefix), "err", err)
				}
				d := retry
				retry = min(2*retry, leaseRetryMax)
				if !k.sleep(d, changed) {
					return
				}
				continue
			}
		} else if a := c.hosted.entry(key); a != nil && a.running() {
			// Started while this node owned it, and the view moved on
			// before handOver could see it running: hand it over now.
			c.stats.handovers.Add(1)
			c.sys.StopActor(a.pid)
		}
		select {
		case <-changed:
		case <-ended:
			// It stopped while this node owns it: start it again, after
			// a backoff that grows while it keeps stopping soon.
			if time.Since(started) > singletonRestartMax {
				restart = singletonRestartMin
			}
			wait, restart = restart, min(2*restart, singletonRestartMax)
		case <-k.ctx.Done():
			return
		}
		if wait > 0 && !k.sleep(wait, changed) {
			return
		}
	}
}

// sleep waits d, or until changed is closed; false once the keeper stops.
func (k *keeper) sleep(d time.Duration, changed <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-changed:
	case <-k.ctx.Done():
		return false
	}
	return true
}

// running: a has started and has not ended.
func (a *activation) running() bool {
	select {
	case <-a.ready:
	default:
		return false
	}
	select {
	case <-a.ended:
		return false
	default:
		return a.err == nil
	}
}

// entry is the activation of key (started or starting), or nil.
func (h *host) entry(key string) *activation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.acts[key]
}

// SingletonOwner is the node that runs (or is to run) the singleton name
// in this node's view, and whether any live node hosts it.
func (c *Cluster) SingletonOwner(name string) (node string, ok bool) {
	return c.Owner(singletonKind(name), singletonID)
}

// SingletonPID returns the PID of the singleton's activation, asking its
// owner (which starts it if it has not yet). As a grain's PID, it is
// pinned to that activation.
func (c *Cluster) SingletonPID(ctx context.Context, name string) (actor.PID, error) {
	return c.resolve(ctx, singletonKind(name), singletonID)
}

// SendSingleton is Send to the singleton name.
func (c *Cluster) SendSingleton(ctx context.Context, caller actor.Caller, name string, msg any) error {
	return c.Send(ctx, caller, singletonKind(name), singletonID, msg)
}

// RequestSingleton is Request to the singleton name: a request pinned
// to an activation whose node dies fails at once as may have executed.
func (c *Cluster) RequestSingleton(ctx context.Context, caller actor.Caller, name string, msg any) (any, error) {
	return c.Request(ctx, caller, singletonKind(name), singletonID, msg)
}

// CallSingleton is Call to the singleton name.
func (c *Cluster) CallSingleton(ctx context.Context, caller actor.Caller, name string, arg proto.Message) (proto.Message, error) {
	return c.Call(ctx, caller, singletonKind(name), singletonID, arg)
}

// CallSingletonAs is c.CallSingleton with the result typed (CallAs).
func CallSingletonAs[R proto.Message](ctx context.Context, c *Cluster, caller actor.Caller, name string, arg proto.Message) (R, error) {
	return CallAs[R](ctx, c, caller, singletonKind(name), singletonID, arg)
}
