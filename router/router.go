package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
)

// Config says how a router chooses. The zero Config is a round-robin
// router.
type Config struct {
	// Kind is the strategy. Default RoundRobin.
	Kind Kind
	// Key gives a message's key, for ConsistentHash (required there,
	// ignored otherwise). It runs on the sender's goroutine, for every
	// message; it must not block.
	Key func(msg any) string
}

func (c Config) validate() error {
	if c.Kind < RoundRobin || c.Kind > ScatterGatherFirst {
		return fmt.Errorf("router: Config.Kind is %d, want one of RoundRobin .. ScatterGatherFirst", int(c.Kind))
	}
	if c.Kind == ConsistentHash && c.Key == nil {
		return errors.New("router: Config.Key is nil; ConsistentHash needs a key function")
	}
	return nil
}

// Router spreads messages over a set of routees. It is a value, not an
// actor: Send and Request pick a routee on the caller's goroutine and
// send to it from the caller (the actor.Caller given: a System, a
// Sender handle or an actor's Context), with no hop through a router
// actor. So the routee sees the caller as the sender, per-sender order
// holds to each routee (messages of one caller that go to one routee
// arrive in order; with ConsistentHash, all of one key's do), and a
// Request's error is the routee's own, with its outcome.
//
// The set of routees is read without a lock (copy on write); Add,
// Remove, a pool's Resize and the removal of routees that died change
// it. Its methods are safe from any goroutine. Build one with NewGroup
// or NewPool; Close it when done.
type Router struct {
	sys *actor.System
	cfg Config

	set  atomic.Pointer[[]member] // never nil after start
	next atomic.Uint64            // round-robin position

	mu       sync.Mutex // serialises writers of set; protects following
	closed   bool
	watcher  actor.PID // watches the PID routees (watch.go)
	onClose  func(ctx context.Context) error
	scatters sync.WaitGroup // scatter-gather requests still running

	stats counters
}

// counters are the router's Stats.
type counters struct {
	noRoutees    atomic.Uint64
	died         atomic.Uint64
	scatterLate  atomic.Uint64
	scatterFails [3]atomic.Uint64 // by actor.Execution
}

// Stats are a router's counters since it started.
type Stats struct {
	// Routees is how many routees it has now.
	Routees int
	// NoRoutees counts the sends and requests refused with ErrNoRoutees.
	NoRoutees uint64
	// Died counts the routees removed because their actor ended or their
	// node incarnation left.
	Died uint64
	// ScatterLate counts the answers of ScatterGatherFirst requests that
	// came after the first (the routee did the work; the answer was not
	// used), and ScatterFailed the losing requests that failed, by
	// outcome (index an actor.Execution): a cancelled one is
	// MayHaveExecuted unless its routee never got it.
	ScatterLate   uint64
	ScatterFailed [3]uint64
}

func newRouter(sys *actor.System, cfg Config) (*Router, error) {
	if sys == nil {
		return nil, errors.New("router: nil System")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Router{sys: sys, cfg: cfg}
	r.set.Store(&[]member{})
	w, err := sys.SpawnFunc(r.watch)
	if err != nil {
		return nil, fmt.Errorf("router: spawn its watcher: %w", err)
	}
	r.watcher = w
	return r, nil
}

// Kind is the router's strategy.
func (r *Router) Kind() Kind { return r.cfg.Kind }

// Routees returns the routees now, in the order they were added.
func (r *Router) Routees() []Routee {
	set := *r.set.Load()
	out := make([]Routee, len(set))
	for i := range set {
		out[i] = set[i].Routee
	}
	return out
}

// Stats returns the router's counters.
func (r *Router) Stats() Stats {
	s := Stats{
		Routees:     len(*r.set.Load()),
		NoRoutees:   r.stats.noRoutees.Load(),
		Died:        r.stats.died.Load(),
		ScatterLate: r.stats.scatterLate.Load(),
	}
	for i := range s.ScatterFailed {
		s.ScatterFailed[i] = r.stats.scatterFails[i].Load()
	}
	return s
}

// Send gives msg to the routee (or, for Broadcast and ScatterGatherFirst,
// every routee) the strategy picks, sent by from. It returns an error
// wrapping ErrNoRoutees (not executed) when the router has no routee,
// and ErrClosed after Close; otherwise nil: the message was handed to the
// runtime, whose failures to deliver are counted dead letters, as for
// any Send.
func (r *Router) Send(from actor.Caller, msg any) error {
	set := *r.set.Load()
	if len(set) == 0 {
		return r.none("send")
	}
	switch r.cfg.Kind {
	case Broadcast, ScatterGatherFirst:
		for i := range set {
			set[i].send(from, msg)
		}
		return nil
	}
	set[r.pick(set, msg)].send(from, msg)
	return nil
}

// Request asks the routee the strategy picks, from from, and waits for
// its answer as from.Request does: the error is the routee's, with its
// outcome (not executed, may have executed, executed). With no routee it
// is ErrNoRoutees, not executed. ScatterGatherFirst asks every routee
// and returns the first answer (scatter.go); Broadcast refuses
// (ErrBroadcastRequest).
func (r *Router) Request(ctx context.Context, from actor.Caller, msg any) (any, error) {
	set := *r.set.Load()
	if len(set) == 0 {
		return nil, r.none("request")
	}
	switch r.cfg.Kind {
	case Broadcast:
		return nil, notExecuted("request", r.cfg.Kind, ErrBroadcastRequest)
	case ScatterGatherFirst:
		return r.scatter(ctx, from, set, msg)
	}
	return set[r.pick(set, msg)].request(ctx, from, msg)
}

// RequestAs is r.Request with the answer typed, as actor.RequestAs: an
// answer of another type is an error wrapping actor.ErrReplyType
// (executed).
func RequestAs[T any](ctx context.Context, r *Router, from actor.Caller, msg any) (T, error) {
	var zero T
	v, err := r.Request(ctx, from, msg)
	if err != nil {
		return zero, err
	}
	if v == nil {
		return zero, nil
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("router %s: request: %w: got %T, want %T", r.cfg.Kind, actor.ErrReplyType, v, zero)
	}
	return t, nil
}

// none is the error for an operation that found no routee.
func (r *Router) none(op string) error {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return notExecuted(op, r.cfg.Kind, ErrClosed)
	}
	r.stats.noRoutees.Add(1)
	return notExecuted(op, r.cfg.Kind, ErrNoRoutees)
}

// add puts members into the set (those not in it yet) and watches the
// PID ones. ErrClosed after Close.
func (r *Router) add(ms ...member) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return notExecuted("add", r.cfg.Kind, ErrClosed)
	}
	old := *r.set.Load()
	set := slices.Clip(old)
	for _, m := range ms {
		if slices.ContainsFunc(set, func(x member) bool { return x.same(m.Routee) }) {
			continue
		}
		set = append(set, m)
		if m.Name == "" {
			r.sys.Send(r.watcher, watchReq{pid: m.PID})
		}
	}
	r.set.Store(&set)
	return nil
}

// remove takes rts out of the set; died says they are gone because
// their actor ended (counted in Stats.Died). It reports how many it
// removed.
func (r *Router) remove(died bool, rts ...Routee) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.set.Load()
	set := make([]member, 0, len(old))
	n := 0
	for _, m := range old {
		if slices.ContainsFunc(rts, m.same) {
			n++
			if m.Name == "" && !died && !r.closed {
				r.sys.Send(r.watcher, unwatchReq{pid: m.PID})
			}
			continue
		}
		set = append(set, m)
	}
	if n == 0 {
		return 0
	}
	if died {
		r.stats.died.Add(uint64(n))
	}
	r.set.Store(&set)
	return n
}

// Close stops the router: it has no routees from then on (Send and
// Request return ErrClosed), its watcher stops, a pool's supervisor
// stops its routees, and Close waits for its scatter-gather requests to
// end. Idempotent; bounded by ctx.
func (r *Router) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.set.Store(&[]member{})
	onClose := r.onClose
	r.mu.Unlock()
	var errs []error
	if onClose != nil {
		errs = append(errs, onClose(ctx))
	}
	if err := r.sys.StopActorWait(ctx, r.watcher); err != nil {
		errs = append(errs, fmt.Errorf("router: stop its watcher: %w", err))
	}
	done := make(chan struct{})
	go func() { r.scatters.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("router: scatter-gather requests still running: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}
