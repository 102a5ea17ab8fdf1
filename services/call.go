package services

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/idempotency"
	"google.golang.org/protobuf/proto"
)

// Call runs fn of service, at a version want accepts, on whichever node
// provides it, and returns the result. Every attempt re-resolves the
// provider (a draining one is never picked, the node that just failed is
// avoided when there is another). Failures that did not execute are
// retried, may-have-executed ones only for idempotent functions, executed
// ones never; all within the budget (see RetryPolicy). ctx bounds the
// whole call, and its deadline travels with every attempt.
//
// A failed call returns a *CallError wrapping the last attempt's error;
// a failed lookup in that attempt is a *LookupError (actor.ErrNoService,
// actor.ErrNoVersion, actor.ErrNoFunction or actor.ErrDraining).
func (s *Services) Call(ctx context.Context, service string, want Constraint, fn string, arg proto.Message, opts ...CallOption) (proto.Message, error) {
	var co callOptions
	for _, o := range opts {
		o(&co)
	}
	if err := co.retry.validate("call option RetryPolicy"); err != nil {
		return nil, &actor.Error{Op: opServiceCall, Target: service + "." + fn, Err: err, Outcome: actor.NotExecuted}
	}
	cl := &callState{s: s, service: service, want: want, fn: fn, arg: arg, co: co}
	return cl.run(ctx)
}

// Effective returns the policy a call would run with now: the provider a
// lookup finds, its contract for fn, and the retry policy merged field by
// field from opts, that provider's defaults, Config.Retry and
// DefaultRetryPolicy.
func (s *Services) Effective(service string, want Constraint, fn string, opts ...CallOption) (Policy, ProviderInfo, error) {
	var co callOptions
	for _, o := range opts {
		o(&co)
	}
	c, err := s.reg.acquire(service, want, fn, "", time.Time{}, false)
	if err != nil {
		return s.policy(co, nil), ProviderInfo{}, err
	}
	pi := ProviderInfo{Node: c.e.node, Incarnation: c.e.inc, Version: c.rec.Version, Local: c.e.local}
	return s.policy(co, &c), pi, nil
}

// policy merges the levels for one call (c nil: no provider found).
func (s *Services) policy(co callOptions, c *candidate) Policy {
	r := co.retry
	var p Policy
	if c != nil {
		r = r.over(c.rec.Defaults.Retry)
		p.Idempotent = c.fn.Idempotent
		p.Deadline = c.fn.Deadline
		if p.Deadline == 0 {
			p.Deadline = c.rec.Defaults.Deadline
		}
	}
	p.Retry = r.over(s.cfg.Retry).over(DefaultRetryPolicy())
	return p
}

// callState is one Call in progress.
type callState struct {
	s       *Services
	service string
	want    Constraint
	fn      string
	arg     proto.Message
	co      callOptions

	pol      RetryPolicy
	deadline time.Time // the budget's end, fixed at the first attempt
	attempts []Attempt
	mayHave  bool // some attempt may have executed
	last     candidate
}

func (c *callState) run(ctx context.Context) (proto.Message, error) {
	s := c.s
	first := s.clock.Now()
	avoid := ""
	for {
		start := s.clock.Now()
		if s.life.Err() != nil {
			return nil, c.fail(ReasonStopped, ErrStopped, nil)
		}
		cand, err := s.reg.acquire(c.service, c.want, c.fn, avoid, start, true)
		var found *candidate
		if err == nil {
			found = &cand
		}
		if len(c.attempts) == 0 {
			c.pol = s.policy(c.co, found).Retry
			c.deadline = first.Add(c.pol.Budget)
		}
		var res proto.Message
		var deadlineHit bool
		if found != nil {
			res, deadlineHit, err = c.attempt(ctx, cand)
			s.reg.release(cand)
		}
		c.last = cand
		c.attempts = append(c.attempts, Attempt{Start: start, Node: nodeOf(found), Incarnation: incOf(found), Version: versionOf(found), Err: err})
		if err == nil {
			s.stats.call(c.service, c.fn, "ok")
			return res, nil
		}
		outcome := actor.Outcome(err)
		if outcome == actor.MayHaveExecuted {
			c.mayHave = true
		}
		if key, ok := idempotency.KeyFrom(ctx); ok && outcome == actor.MayHaveExecuted && found != nil && cand.fn.Keyed && !cand.fn.Idempotent && ctx.Err() == nil {
			res, st, serr := c.settle(ctx, cand, key)
			switch {
			case st == idempotency.Done && serr == nil:
				s.stats.call(c.service, c.fn, "ok")
				return res, nil
			case st == idempotency.Done && actor.Outcome(serr) == actor.Executed:
				return nil, c.fail(ReasonExecuted, serr, nil)
			case st == idempotency.Done:
				return nil, c.fail(ReasonUnsettled, serr, nil)
			case st == idempotency.NeverRan:
				// Fenced there up to this attempt: it never runs. Every
				// earlier one was settled the same way. The next attempt
				// carries a higher number, which the fence lets run.
				c.mayHave = false
				outcome = actor.NotExecuted
				ctx = idempotency.WithAttempt(ctx, idempotency.AttemptFrom(ctx)+1)
			default:
				return nil, c.fail(ReasonUnsettled, fmt.Errorf("%w (status of key %q: %v)", err, key, serr), nil)
			}
		}
		switch {
		case ctx.Err() != nil:
			return nil, c.fail(ReasonContext, err, ctx.Err())
		case outcome == actor.Executed:
			return nil, c.fail(ReasonExecuted, err, nil)
		case outcome == actor.MayHaveExecuted && !cand.fn.Idempotent:
			return nil, c.fail(ReasonNotIdempotent, err, nil)
		case errors.Is(err, actor.ErrBadMessage):
			return nil, c.fail(ReasonPermanent, err, nil)
		case !c.pol.attemptsLeft(len(c.attempts)):
			return nil, c.fail(ReasonAttempts, err, nil)
		}
		pause := c.pol.pause(len(c.attempts))
		if !s.clock.Now().Add(pause).Before(c.deadline) {
			return nil, c.fail(ReasonBudget, err, nil)
		}
		s.stats.retry(c.service, c.fn, retryReason(err, deadlineHit))
		if serr := c.sleep(ctx, pause); serr != nil {
			if ctx.Err() != nil {
				return nil, c.fail(ReasonContext, err, ctx.Err())
			}
			return nil, c.fail(ReasonStopped, err, nil)
		}
		if found != nil {
			avoid = cand.e.node
		}
	}
}

// settle asks the provider of cand, whose attempt of the call keyed key
// may have executed, what became of it (idempotency.Status): Done with
// the recorded result (the reply, or the recorded error), NeverRan (the
// key is fenced there: retry), or another state with the reason it is
// not settled. While the attempt runs, or the provider does not answer,
// it asks again after the policy's pauses, within the budget.
func (c *callState) settle(ctx context.Context, cand candidate, key string) (proto.Message, idempotency.State, error) {
	for i := 1; ; i++ {
		rec, err := idempotency.Status(ctx, c.s.sys, cand.e.node, key, cand.e.inc)
		switch {
		case err == nil && rec.State == idempotency.Done:
			m, rerr := rec.Result()
			return m, idempotency.Done, rerr
		case err == nil && rec.State == idempotency.NeverRan:
			return nil, idempotency.NeverRan, nil
		case err == nil && rec.State == idempotency.Interrupted:
			return nil, idempotency.Interrupted, fmt.Errorf("interrupted: it was running when incarnation %s ended", actor.FormatIncarnation(rec.Inc))
		case err != nil && actor.Outcome(err) != actor.NotExecuted:
			return nil, idempotency.Interrupted, err // lost with the incarnation, or a refusal
		}
		if err == nil {
			err = fmt.Errorf("still running")
		}
		pause := c.pol.pause(i)
		if !c.s.clock.Now().Add(pause).Before(c.deadline) {
			// The status call's own advice is not the call's: cut it.
			return nil, idempotency.Interrupted, fmt.Errorf("not settled within the budget, the last status call failed: %s", strings.TrimSuffix(err.Error(), ": not executed; safe to retry"))
		}
		if serr := c.sleep(ctx, pause); serr != nil {
			return nil, idempotency.Interrupted, fmt.Errorf("not settled: %w", serr)
		}
	}
}

// attempt makes one call to c's provider. deadlineHit reports that the
// provider's Deadline, not the caller's ctx, ended it.
func (c *callState) attempt(ctx context.Context, cand candidate) (proto.Message, bool, error) {
	d := cand.fn.Deadline
	if d == 0 {
		d = cand.rec.Defaults.Deadline
	}
	actx := ctx
	if d > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if h := c.s.testBeforeCall; h != nil {
		h()
	}
	name := regName(cand.rec.Name, cand.rec.Version.Major, c.fn)
	var res proto.Message
	var err error
	if c.co.sender != nil {
		res, err = c.co.sender.Call(actx, cand.e.node, name, c.arg)
	} else {
		res, err = c.s.sys.Call(actx, cand.e.node, name, c.arg)
	}
	hit := err != nil && ctx.Err() == nil && actx.Err() != nil
	if ae, ok := err.(*actor.Error); hit && ok {
		ae.Err = fmt.Errorf("the provider's declared deadline of %v passed (a wedged handler?): %w", d, ae.Err)
	}
	return res, hit, err
}

// sleep waits d on the clock, or until ctx ends or the layer stops.
func (c *callState) sleep(ctx context.Context, d time.Duration) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.s.life, cancel)
	defer stop()
	return c.s.clock.Sleep(sctx, d)
}

// fail builds the call's error and counts it.
func (c *callState) fail(why Reason, err, ctxErr error) error {
	e := &CallError{
		Service: c.service, Want: c.want, Function: c.fn,
		Attempts: c.attempts, Reason: why, Budget: c.pol.Budget, Err: err, CtxErr: ctxErr,
	}
	if c.last.e != nil {
		e.Node, e.Incarnation, e.Version = c.last.e.node, c.last.e.inc, c.last.rec.Version
	}
	out := actor.Outcome(err)
	if c.mayHave && out == actor.NotExecuted {
		// The whole call may have executed: said so over the last error,
		// which then no longer matches its not-executed sentinel.
		e.Err = actor.MayHaveExecutedError(err)
		out = actor.MayHaveExecuted
	}
	c.s.stats.call(c.service, c.fn, out.Label())
	return e
}

// retryReason labels a retried failure.
func retryReason(err error, deadlineHit bool) string {
	if deadlineHit {
		return "deadline"
	}
	if code := actor.ErrorCode(err); code != "" {
		return code
	}
	return "unknown"
}

func nodeOf(c *candidate) string {
	if c == nil {
		return ""
	}
	return c.e.node
}

func incOf(c *candidate) uint64 {
	if c == nil {
		return 0
	}
	return c.e.inc
}

func versionOf(c *candidate) Version {
	if c == nil {
		return Version{}
	}
	return c.rec.Version
}
