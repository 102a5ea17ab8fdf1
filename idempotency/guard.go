package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
)

// Guard runs handlers under keys over one Store, for one incarnation.
// One guard per store: the guard decides every claim, takeover and fence
// of its store under its own lock.
type Guard struct {
	store Store
	inc   uint64
	rerun bool // RerunInterrupted

	mu      sync.Mutex          // protects following, and orders claims, takeovers and fences
	running map[string]*attempt // this incarnation's attempts running now
}

// attempt is one running attempt of a key.
type attempt struct {
	done    chan struct{} // closed when it ends
	waiters []func()      // called when it ends (repeats answered later)
}

// maxWaiters bounds the repeats of one running key that wait for it
// without a goroutine of their own (Middleware): past it a repeat is
// refused, not executed.
const maxWaiters = 1024

// Option configures a Guard.
type Option func(*Guard)

// RerunInterrupted declares that the handlers run under the guard leave
// no effect but the result the guard records: their work done twice is
// harmless until a result is recorded (a computation, or effects written
// in the same transaction as the record). Then an attempt that was
// running when its incarnation ended (a durable store kept its claim)
// left nothing behind: Run runs the key again, and Status answers
// NeverRan for it and fences it. Without it such a key is ErrInterrupted
// (may have executed) for Run and Interrupted for Status. It changes
// nothing with an in-memory store, whose claims go with the incarnation.
func RerunInterrupted() Option { return func(g *Guard) { g.rerun = true } }

// NewGuard returns a guard over store for the incarnation inc (the
// node's, actor.System.Incarnation).
func NewGuard(store Store, inc uint64, opts ...Option) *Guard {
	g := &Guard{store: store, inc: inc, running: map[string]*attempt{}}
	for _, o := range opts {
		o(g)
	}
	return g
}

// Run runs fn once per key. The first attempt records Running, runs fn
// and records its reply or error; a repeat while it runs waits for it
// (or ctx) and gets its result; a repeat after gets the recorded result
// without running fn: the reply, or the error with its code and outcome
// (a rejection or a panic: executed; an error that may have executed,
// such as fn's ctx ending mid-work: may have executed). An fn error that
// did not execute (actor.NotExecutedError, a not-executed error of a
// call fn made) releases the key: nothing is recorded, a retry runs fn.
//
// A key fenced by Status is refused with ErrFenced, a full store with
// ErrStoreFull, a bad key with ErrBadKey: all not executed
// (actor.Outcome). A durable record left Running by an earlier
// incarnation is ErrInterrupted, may have executed (RerunInterrupted
// runs it again instead).
func (g *Guard) Run(ctx context.Context, key string, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	for {
		b := g.begin(key, AttemptFrom(ctx), nil)
		switch {
		case b.claimed != nil:
			return g.run(ctx, key, b.claimed, fn)
		case b.wait != nil:
			select {
			case <-b.wait:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		default:
			return b.reply, b.err
		}
	}
}

// begun is what begin found for a key: claimed (this attempt runs; end
// it with finish), wait (another attempt of this incarnation runs: wait
// for it, or, with an onEnd given, onEnd is called when it ends), or the
// answer a repeat gets (reply, err).
type begun struct {
	claimed *attempt
	wait    chan struct{}
	reply   []byte
	err     error
}

// begin claims key for the attempt numbered attemptNo, or says why not. onEnd, when not nil, is queued to
// run when the attempt running now ends (b.wait is set then, and nobody
// needs to wait on it).
func (g *Guard) begin(key string, attemptNo uint64, onEnd func()) begun {
	g.mu.Lock()
	rec, claimed, err := g.store.Claim(key, g.inc)
	switch {
	case err != nil || claimed:
	case rec.State == Running && rec.Inc != g.inc && g.rerun:
		err = g.store.Put(key, Record{State: Running, Inc: g.inc}) // take the interrupted attempt over
		claimed = err == nil
	case rec.State == Fenced && attemptNo > rec.Attempt:
		err = g.store.Put(key, Record{State: Running, Inc: g.inc}) // a later attempt than the fence refuses
		claimed = err == nil
	}
	var a *attempt
	switch {
	case claimed:
		a = &attempt{done: make(chan struct{})}
		g.running[key] = a
	case err == nil && rec.State == Running && rec.Inc == g.inc:
		a = g.running[key]
		if a != nil && onEnd != nil {
			if len(a.waiters) >= maxWaiters {
				g.mu.Unlock()
				return begun{err: actor.NotExecutedError(fmt.Errorf("idempotency: key %q: %d repeats already wait for its running attempt", key, maxWaiters))}
			}
			a.waiters = append(a.waiters, onEnd)
		}
	}
	g.mu.Unlock()
	switch {
	case err != nil:
		return begun{err: actor.NotExecutedError(fmt.Errorf("idempotency: key %q: %w", key, err))}
	case claimed:
		return begun{claimed: a}
	}
	switch rec.State {
	case Done:
		r, err := result(rec)
		return begun{reply: r, err: err}
	case Fenced:
		return begun{err: actor.NotExecutedError(fmt.Errorf("idempotency: key %q: %w", key, ErrFenced))}
	case Running:
		if rec.Inc != g.inc {
			return begun{err: actor.MayHaveExecutedError(fmt.Errorf("idempotency: key %q: %w (incarnation %s)", key, ErrInterrupted, actor.FormatIncarnation(rec.Inc)))}
		}
		if a == nil {
			// The attempt ended and its record could not be written
			// (the store failed twice): what it did is not known.
			return begun{err: actor.MayHaveExecutedError(fmt.Errorf("idempotency: key %q: its attempt ended and its record was not kept", key))}
		}
		return begun{wait: a.done}
	}
	return begun{err: fmt.Errorf("idempotency: key %q: unexpected record %v", key, rec.State)}
}

// result is what a repeat of a Done key gets.
func result(rec Record) ([]byte, error) {
	if rec.Err == "" {
		return rec.Reply, nil
	}
	err := error(&recordedError{code: rec.Code, msg: rec.Err})
	if rec.Outcome == actor.MayHaveExecuted {
		return nil, actor.MayHaveExecutedError(err)
	}
	// A rejection or a panic: executed, as actor.Outcome says of it
	// (a plain error would read as may have executed there), and a
	// rejection again when a handler returns it.
	return nil, &actor.OutcomeError{Outcome: actor.Executed, Err: err}
}

// recordedError is a recorded error given again: its text and code.
type recordedError struct{ code, msg string }

func (e *recordedError) Error() string     { return e.msg }
func (e *recordedError) ErrorCode() string { return e.code }
func (e *recordedError) Is(target error) bool {
	c, ok := target.(actor.Coded)
	return ok && e.code != "" && c.ErrorCode() == e.code
}

// run runs the attempt a that claimed key and records how it ended.
func (g *Guard) run(ctx context.Context, key string, a *attempt, fn func(context.Context) ([]byte, error)) (reply []byte, err error) {
	defer func() {
		v := recover()
		if v != nil {
			err = fmt.Errorf("panicked: %v", v) // recorded; the panic goes on
		}
		err = g.finish(key, a, reply, err)
		if v != nil {
			panic(v)
		}
	}()
	return fn(ctx)
}

// finish records the end of key's attempt a, wakes what waits for it,
// and returns what its caller gets.
func (g *Guard) finish(key string, a *attempt, reply []byte, err error) error {
	err = g.end(key, reply, err)
	g.mu.Lock()
	if g.running[key] == a {
		delete(g.running, key)
	}
	waiters := a.waiters
	a.waiters = nil
	g.mu.Unlock()
	close(a.done)
	for _, f := range waiters {
		f()
	}
	return err
}

// end records the end of key's attempt and returns what its caller gets.
func (g *Guard) end(key string, reply []byte, err error) error {
	if err != nil && actor.Outcome(err) == actor.NotExecuted {
		if derr := g.store.Delete(key); derr != nil {
			return actor.MayHaveExecutedError(fmt.Errorf("idempotency: key %q did not execute, its claim was not released (a retry is refused until it is): %w", key, derr))
		}
		return err
	}
	rec := Record{State: Done, Inc: g.inc, Reply: reply}
	if err != nil {
		rec.Reply, rec.Err, rec.Code, rec.Outcome = nil, err.Error(), actor.ErrorCode(err), statedOutcome(err)
	}
	perr := g.store.Put(key, rec)
	if perr == nil {
		return err
	}
	// Keep at least that it ran, so a repeat does not run it again.
	lost := fmt.Errorf("idempotency: key %q ran, its result was not kept: %w", key, perr)
	if g.store.Put(key, Record{State: Done, Inc: g.inc, Err: lost.Error(), Outcome: actor.Executed}) == nil {
		return &actor.OutcomeError{Outcome: actor.Executed, Err: lost} // it ran, and every repeat is told so
	}
	return actor.MayHaveExecutedError(lost)
}

// Status answers what happened to key in the call incarnation inc took:
// Done (with its record), Running, Interrupted, or NeverRan, after which
// the key is fenced so that a late copy of the call is refused. Asked
// about another incarnation than this guard's with an in-memory store
// (inc 0, not known, included), it is ErrRecordLost: the record went with
// that incarnation.
//
// The fence refuses attempt 0 (a call without WithAttempt); a call of a
// higher attempt runs. The remote Status fences up to the attempt its
// ctx carries.
func (g *Guard) Status(key string, inc uint64) (Record, error) { return g.status(key, inc, 0) }

// status is Status fencing up to attemptNo.
func (g *Guard) status(key string, inc, attemptNo uint64) (Record, error) {
	if !g.store.Durable() && inc != g.inc {
		return Record{}, fmt.Errorf("%w: key %q was taken by incarnation %s, this is %s", ErrRecordLost, key, actor.FormatIncarnation(inc), actor.FormatIncarnation(g.inc))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// Fencing is a claim: under the lock, no attempt claims between.
	rec, claimed, err := g.store.Claim(key, g.inc)
	if err != nil {
		return Record{}, fmt.Errorf("idempotency: status of %q: %w", key, err)
	}
	interrupted := !claimed && rec.State == Running && rec.Inc != g.inc
	if claimed || interrupted && g.rerun {
		if err := g.store.Put(key, Record{State: Fenced, Inc: g.inc, Attempt: attemptNo}); err != nil {
			if claimed {
				err = errors.Join(err, g.store.Delete(key))
			}
			return Record{}, fmt.Errorf("idempotency: status of %q: fence: %w", key, err)
		}
		return Record{State: NeverRan, Inc: g.inc}, nil
	}
	switch {
	case interrupted:
		rec.State = Interrupted
	case rec.State == Fenced:
		if attemptNo > rec.Attempt { // raise the fence to the attempt asked about
			rec.Attempt = attemptNo
			if err := g.store.Put(key, rec); err != nil {
				return Record{}, fmt.Errorf("idempotency: status of %q: fence: %w", key, err)
			}
		}
		rec.State = NeverRan
	}
	return rec, nil
}

// statedOutcome is the outcome a handler's error gives its caller (see
// actor.Handler): may have executed when it says so (a declaration, a
// mailroom error, its ended ctx), else executed: a plain error is a
// rejection.
func statedOutcome(err error) actor.Execution {
	var oe *actor.OutcomeError
	var ae *actor.Error
	switch {
	case errors.As(err, &oe):
		return oe.Outcome
	case errors.As(err, &ae):
		return ae.Outcome
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return actor.MayHaveExecuted
	}
	return actor.Executed
}
