package router

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/supervisor"
)

// PoolSpec says what a pool router spawns and how it supervises it.
type PoolSpec struct {
	// Size is how many routees to start. At least 1.
	Size int
	// Routee is each routee's child spec. Props is required; ID is the
	// prefix of the routees' IDs under the supervisor (default "routee":
	// "routee-0", "routee-1", ...); Restart, Shutdown and Backoff apply
	// to every routee. Name must be empty: N routees cannot share one.
	Routee supervisor.ChildSpec
	// Supervisor is the pool's supervisor: Strategy, Intensity, Period,
	// Logger. Children must be empty (the pool makes them).
	Supervisor supervisor.Spec
}

// Pool is a router over routees it spawns itself, under a supervisor of
// its own (a top-level actor on the router's node): a routee that ends
// is removed at once and, as its RestartType says, restarted by the
// supervisor and added again (with ConsistentHash it gets its keys back:
// a routee's hash is its child ID, not its PID). Resize grows and
// shrinks it. If the supervisor gives up (its restart intensity
// exceeded) its routees are gone and the pool has none: Send and
// Request return ErrNoRoutees.
type Pool struct {
	*Router
	spec PoolSpec
	sup  actor.PID

	resizeMu sync.Mutex // serialises Resize; protects following
	slots    []string   // child IDs, in start order
	nextSlot int

	retireMu sync.Mutex      // protects following
	retiring map[string]bool // slots Resize is stopping: not "died"
}

// NewPool starts a pool router on sys: its supervisor, spec.Size
// routees under it (started before NewPool returns), and the router's
// watcher. Close stops them all.
func NewPool(sys *actor.System, cfg Config, spec PoolSpec) (*Pool, error) {
	switch {
	case spec.Size < 1:
		return nil, fmt.Errorf("router: PoolSpec.Size is %d, want at least 1", spec.Size)
	case spec.Routee.Props == nil || spec.Routee.Props.Producer == nil:
		return nil, errors.New("router: PoolSpec.Routee.Props (and its Producer) is required")
	case spec.Routee.Name != "":
		return nil, fmt.Errorf("router: PoolSpec.Routee.Name is %q: routees of a pool cannot share a registered name", spec.Routee.Name)
	case len(spec.Supervisor.Children) > 0:
		return nil, errors.New("router: PoolSpec.Supervisor.Children must be empty; the pool makes its routees")
	}
	if spec.Routee.ID == "" {
		spec.Routee.ID = "routee"
	}
	r, err := newRouter(sys, cfg)
	if err != nil {
		return nil, err
	}
	p := &Pool{Router: r, spec: spec, retiring: make(map[string]bool)}
	sup := spec.Supervisor
	sup.Children = make([]supervisor.ChildSpec, 0, spec.Size)
	for range spec.Size {
		sup.Children = append(sup.Children, p.newChild())
	}
	if p.sup, err = supervisor.Start(sys, sup); err != nil {
		return nil, errors.Join(fmt.Errorf("router: start the pool's supervisor: %w", err), r.Close(context.Background()))
	}
	r.onClose = func(ctx context.Context) error {
		if err := sys.StopActorWait(ctx, p.sup); err != nil {
			return fmt.Errorf("router: stop the pool's supervisor: %w", err)
		}
		return nil
	}
	return p, nil
}

// Supervisor is the PID of the pool's supervisor, for package
// supervisor's WhichChildren and Trees.
func (p *Pool) Supervisor() actor.PID { return p.sup }

// newChild is the spec of the next routee: the pool's, with a new ID and
// Props whose instances join the router when started and leave it when
// stopped. Called with resizeMu held (or before the pool is shared).
func (p *Pool) newChild() supervisor.ChildSpec {
	cs := p.spec.Routee
	cs.ID = p.spec.Routee.ID + "-" + strconv.Itoa(p.nextSlot)
	p.nextSlot++
	p.slots = append(p.slots, cs.ID)
	props := *cs.Props
	props.ReceiveMiddleware = append([]actor.ReceiveMiddleware{p.track(cs.ID)}, cs.Props.ReceiveMiddleware...)
	cs.Props = &props
	return cs
}

// track is the outermost receive middleware of the routee in slot: the
// instance is added to the set once its Started has run (one whose
// Started panics never is) and removed before its Stopped runs, which
// every instance receives, a crashed one too. The watcher watches it
// as well, so a removal is never missed.
func (p *Pool) track(slot string) actor.ReceiveMiddleware {
	return func(next actor.ReceiveFunc) actor.ReceiveFunc {
		return func(c *actor.Context) {
			switch c.Message().(type) {
			case actor.Started:
				next(c)
				_ = p.add(newMember(p.sys, Of(c.Self()), slot)) // ErrClosed: the pool is stopping it
				return
			case actor.Stopped:
				p.retireMu.Lock()
				retired := p.retiring[slot]
				p.retireMu.Unlock()
				p.remove(!retired, Of(c.Self()))
			}
			next(c)
		}
	}
}

// Size is how many routees the pool is meant to have (Resize's last
// size); Routees is how many are running now.
func (p *Pool) Size() int {
	p.resizeMu.Lock()
	defer p.resizeMu.Unlock()
	return len(p.slots)
}

// Resize grows the pool to n routees (the new ones are started, and in
// the set, before it returns) or shrinks it, stopping the routees
// started last within their Shutdown bound. n is at least 1.
func (p *Pool) Resize(ctx context.Context, n int) error {
	if n < 1 {
		return fmt.Errorf("router: resize to %d: want at least 1", n)
	}
	p.resizeMu.Lock()
	defer p.resizeMu.Unlock()
	for len(p.slots) < n {
		cs := p.newChild()
		if _, err := supervisor.StartChild(ctx, p.sys, p.sup, cs); err != nil {
			p.slots = p.slots[:len(p.slots)-1]
			return fmt.Errorf("router: resize to %d: %w", n, err)
		}
	}
	for len(p.slots) > n {
		slot := p.slots[len(p.slots)-1]
		p.retireMu.Lock()
		p.retiring[slot] = true
		p.retireMu.Unlock()
		err := supervisor.TerminateChild(ctx, p.sys, p.sup, slot)
		if err == nil {
			err = supervisor.DeleteChild(ctx, p.sys, p.sup, slot)
		}
		p.retireMu.Lock()
		delete(p.retiring, slot)
		p.retireMu.Unlock()
		if err != nil {
			return fmt.Errorf("router: resize to %d: %w", n, err)
		}
		p.slots = p.slots[:len(p.slots)-1]
	}
	return nil
}
