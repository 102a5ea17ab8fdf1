package idempotency

import (
	"context"
	"fmt"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"google.golang.org/protobuf/proto"
)

// Middleware runs the messages that carry an idempotency key (WithKey;
// the HeaderKey header) under g, once per key; messages without one pass
// as they are.
//
// A request with a key is recorded Running before the actor handles it;
// its answer (Respond, RespondError, a Defer's Reply, the actor's crash)
// is recorded and then given to the caller. A repeat while it runs waits
// for it without holding the actor (the repeat's answer is deferred) and
// gets its result; a repeat after gets the recorded result without the
// actor seeing it: the reply (a proto.Message; a reply of another type
// reaches the first caller, and repeats are told it was not kept), or
// the error with its code and outcome. The refusals of Run (ErrFenced,
// ErrStoreFull, ErrBadKey: not executed; ErrInterrupted: may have
// executed) answer the request the same way.
//
// A send (no answer) with a key is handled once: a repeat is dropped
// (logged at debug level), since the first copy ran or runs; a send the
// guard refuses (ErrStoreFull, ErrFenced, ErrBadKey) is a dead letter.
// A keyed request the actor stashes is handled as the same attempt when
// it is unstashed.
//
// Use it in Props.ReceiveMiddleware of the actors that should be
// idempotent, or in Config.ReceiveMiddleware for every actor of the
// node. Functions (Call) take Handler instead.
func Middleware(g *Guard) actor.ReceiveMiddleware {
	return func(next actor.ReceiveFunc) actor.ReceiveFunc {
		return func(c *actor.Context) {
			key, ok := c.Headers().Get(HeaderKey)
			if !ok {
				next(c)
				return
			}
			g.receive(c, key, next)
		}
	}
}

// Handler is h run under g for the calls that carry an idempotency key
// (KeyFrom of its ctx), once per key, as Run: a repeat gets the first
// reply (the same proto type; it must be linked into the callee), or
// the recorded error with its outcome; calls without a key run h as
// they are. Register the result: sys.Register(name, idempotency.Handler(g, h)).
func Handler(g *Guard, h actor.Handler) actor.Handler {
	return func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		key, ok := KeyFrom(ctx)
		if !ok {
			return h(ctx, arg)
		}
		var first proto.Message
		ran := false
		b, err := g.Run(ctx, key, func(ctx context.Context) ([]byte, error) {
			ran = true
			m, err := h(ctx, arg)
			if err != nil {
				return nil, err
			}
			first = m
			return encodeReply(m)
		})
		if err != nil {
			return nil, err
		}
		if ran {
			return first, nil
		}
		return decodeReply(b)
	}
}

// receive handles the keyed message c holds.
func (g *Guard) receive(c *actor.Context, key string, next actor.ReceiveFunc) {
	var b begun
	again := false
	isRequest := actorhooks.WrapReply(c, func(r actor.Replier) actor.Replier {
		if rc, ok := r.(*recorder); ok && rc.g == g && rc.key == key {
			again = true // this attempt itself, unstashed: handle it
			return r
		}
		b = g.begin(key, attemptOf(c.Headers()), nil)
		if b.claimed == nil {
			return r
		}
		return &recorder{g: g, key: key, a: b.claimed, r: r}
	})
	if !isRequest {
		g.receiveSend(c, key, next)
		return
	}
	switch {
	case again, b.claimed != nil:
		next(c) // its answer goes through the recorder
	case b.wait != nil:
		d := c.Defer()
		g.whenEnded(key, func() { d.Reply(g.settled(key)) })
	case b.err != nil:
		c.RespondError(b.err)
	default:
		m, err := decodeReply(b.reply)
		if err != nil {
			c.RespondError(err)
			return
		}
		c.Respond(m)
	}
}

// receiveSend handles a keyed send: once.
func (g *Guard) receiveSend(c *actor.Context, key string, next actor.ReceiveFunc) {
	b := g.begin(key, attemptOf(c.Headers()), nil)
	switch {
	case b.err != nil && actor.Outcome(b.err) == actor.NotExecuted:
		// Refused (a full store, a fenced or bad key): a dead letter.
		actorhooks.DeadLetter(c.System(), c.Self(), c.Sender(), c.Message(), b.err)
		return
	case b.claimed == nil:
		c.Logger().Debug("idempotency: repeat of a keyed message dropped: its first copy ran or runs", "key", key, "message", fmt.Sprintf("%T", c.Message()))
		return
	}
	defer func() {
		if v := recover(); v != nil {
			_ = g.finish(key, b.claimed, nil, fmt.Errorf("panicked: %v", v))
			panic(v)
		}
	}()
	next(c)
	_ = g.finish(key, b.claimed, nil, nil)
}

// whenEnded calls f once the attempt of key running now has ended (at
// once if none runs). Past maxWaiters it calls f at once too: settled
// then answers that the attempt still runs.
func (g *Guard) whenEnded(key string, f func()) {
	g.mu.Lock()
	a := g.running[key]
	if a != nil && len(a.waiters) < maxWaiters {
		a.waiters = append(a.waiters, f)
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	f()
}

// settled is the answer a repeat of key gets from its record, once the
// attempt it waited for has ended.
func (g *Guard) settled(key string) (any, error) {
	rec, ok, err := g.store.Get(key)
	switch {
	case err != nil:
		return nil, actor.NotExecutedError(fmt.Errorf("idempotency: key %q: %w", key, err))
	case !ok:
		return nil, actor.NotExecutedError(fmt.Errorf("idempotency: key %q: the attempt it waited for did not execute; retry", key))
	}
	switch rec.State {
	case Done:
		b, err := result(rec)
		if err != nil {
			return nil, err
		}
		m, err := decodeReply(b)
		if err != nil {
			return nil, err
		}
		return m, nil
	case Fenced:
		return nil, actor.NotExecutedError(fmt.Errorf("idempotency: key %q: %w", key, ErrFenced))
	}
	g.mu.Lock()
	busy := g.running[key] != nil
	g.mu.Unlock()
	if busy {
		return nil, actor.NotExecutedError(fmt.Errorf("idempotency: key %q: %d repeats already wait for its running attempt", key, maxWaiters))
	}
	return nil, actor.MayHaveExecutedError(fmt.Errorf("idempotency: key %q: its attempt ended and its record was not kept", key))
}

// recorder is the Replier of a keyed request's first attempt: it records
// the answer, then gives it to the caller.
type recorder struct {
	g    *Guard
	key  string
	a    *attempt
	r    actor.Replier
	once sync.Once
}

func (rc *recorder) Reply(msg any, err error) {
	rc.once.Do(func() {
		var b []byte
		var kept error // the reply cannot be recorded
		if err == nil {
			pm, ok := msg.(proto.Message)
			switch {
			case msg == nil:
			case !ok:
				kept = fmt.Errorf("idempotency: key %q ran; its reply of type %T is not a proto.Message and was not kept", rc.key, msg)
			default:
				b, kept = encodeReply(pm)
			}
		}
		rerr := err
		if kept != nil {
			rerr = kept // recorded as a rejection: it ran
		}
		ferr := rc.g.finish(rc.key, rc.a, b, rerr)
		switch {
		case kept != nil:
			rc.r.Reply(msg, nil) // the first caller still gets it
		case err == nil && ferr != nil:
			rc.r.Reply(nil, ferr) // the result was not kept
		default:
			rc.r.Reply(msg, ferr)
		}
	})
}
