package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
)

// Guard runs handlers under keys over one Store, for one incarnation.
type Guard struct {
	store Store
	inc   uint64

	mu      sync.Mutex               // protects following
	running map[string]chan struct{} // closed when the attempt ends
}

// NewGuard returns a guard over store for the incarnation inc (the
// node's, actor.System.Incarnation).
func NewGuard(store Store, inc uint64) *Guard {
	return &Guard{store: store, inc: inc, running: map[string]chan struct{}{}}
}

// Run runs fn once per key. The first attempt records Running, runs fn
// and records its reply or error; a repeat while it runs waits for it
// (or ctx) and gets its result; a repeat after gets the recorded result
// without running fn. A key fenced by Status is refused with ErrFenced,
// a full store with ErrStoreFull, both not executed (actor.Outcome). A
// durable record left Running by an earlier incarnation is not run
// again: Run returns an error, may have executed.
func (g *Guard) Run(ctx context.Context, key string, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	for {
		rec, claimed, err := g.store.Claim(key, g.inc)
		if err != nil {
			return nil, actor.NotExecutedError(err)
		}
		if claimed {
			return g.run(ctx, key, fn)
		}
		switch rec.State {
		case Done:
			return result(rec)
		case Fenced:
			return nil, actor.NotExecutedError(fmt.Errorf("%w: %q", ErrFenced, key))
		case Running:
			if rec.Inc != g.inc {
				return nil, actor.MayHaveExecutedError(fmt.Errorf("idempotency: key %q: an attempt was running when incarnation %s ended", key, actor.FormatIncarnation(rec.Inc)))
			}
			g.mu.Lock()
			done := g.running[key]
			g.mu.Unlock()
			if done == nil {
				continue // it just ended: read its record
			}
			select {
			case <-done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		default:
			return nil, fmt.Errorf("idempotency: key %q: unexpected record %v", key, rec.State)
		}
	}
}

func result(rec Record) ([]byte, error) {
	if rec.Err != "" {
		return nil, errors.New(rec.Err) // the recorded rejection: executed
	}
	return rec.Reply, nil
}

func (g *Guard) run(ctx context.Context, key string, fn func(context.Context) ([]byte, error)) (reply []byte, err error) {
	done := make(chan struct{})
	g.mu.Lock()
	g.running[key] = done
	g.mu.Unlock()
	defer func() {
		rec := Record{State: Done, Inc: g.inc, Reply: reply}
		if err != nil {
			rec.Err = err.Error()
		}
		if perr := g.store.Put(key, rec); perr != nil && err == nil {
			err = actor.MayHaveExecutedError(fmt.Errorf("idempotency: key %q ran, its record was not kept: %w", key, perr))
		}
		g.mu.Lock()
		delete(g.running, key)
		g.mu.Unlock()
		close(done)
	}()
	return fn(ctx)
}

// Status answers what happened to key in the call incarnation inc took:
// Done (with its record), Running, Interrupted, or NeverRan, after which
// the key is fenced so that a late copy of the call is refused. Asked
// about another incarnation than this guard's with an in-memory store,
// it is ErrRecordLost: the record went with that incarnation.
func (g *Guard) Status(key string, inc uint64) (Record, error) {
	if !g.store.Durable() && inc != g.inc {
		return Record{}, fmt.Errorf("%w: key %q was taken by incarnation %s, this is %s", ErrRecordLost, key, actor.FormatIncarnation(inc), actor.FormatIncarnation(g.inc))
	}
	// Fencing is a claim: it races a late attempt's claim and one wins.
	rec, claimed, err := g.store.Claim(key, g.inc)
	if err != nil {
		return Record{}, err
	}
	if claimed {
		if err := g.store.Put(key, Record{State: Fenced, Inc: g.inc}); err != nil {
			return Record{}, err
		}
		return Record{State: NeverRan, Inc: g.inc}, nil
	}
	if rec.State == Running && rec.Inc != g.inc {
		rec.State = Interrupted
	}
	if rec.State == Fenced {
		rec.State = NeverRan
	}
	return rec, nil
}
