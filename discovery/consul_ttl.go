package discovery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/consul/api"
)

// checkState is the TTL check of self as the local agent reports it.
type checkState int

const (
	checkPassing  checkState = iota + 1 // passing or warning
	checkCritical                       // expired: others may have seen it
	checkMissing                        // the agent does not know it
)

// ttlAction is what the updater does in one attempt.
type ttlAction int

const (
	actRefresh  ttlAction = iota + 1 // UpdateTTL to passing
	actRegister                      // (re-)register self with a passing check
	actDead                          // declare self dead, stop refreshing
)

// ttlCore is the TTL updater's synchronous core. It judges from the local
// monotonic clock and from the agent's view of the check whether self may
// keep refreshing, or whether the cluster may already have seen it dead.
//
// The updater calls stalled, then (after asking the agent) decide, then,
// after performing the action, done.
type ttlCore struct {
	ttl       time.Duration
	reapAfter time.Duration // DeregisterCriticalAfter

	lastOK  time.Time // when the last successful refresh or registration was sent
	lastEnd time.Time // when the last attempt ended, successful or not
	failing bool      // an attempt failed since lastOK: the agent was unreachable
}

func newTTLCore(ttl, reapAfter time.Duration, registeredAt, now time.Time) *ttlCore {
	return &ttlCore{ttl: ttl, reapAfter: reapAfter, lastOK: registeredAt, lastEnd: now}
}

// stalled reports, at the start of an attempt, whether the updater did
// not run for longer than the TTL: the process was frozen (SIGSTOP, VM
// pause) or starved, the check has expired meanwhile and other nodes have
// reported this incarnation down.
func (c *ttlCore) stalled(now time.Time) (string, bool) {
	if gap := now.Sub(c.lastEnd); gap > c.ttl {
		return fmt.Sprintf("the TTL updater did not run for %v, more than the TTL %v (process frozen?)", gap.Round(time.Millisecond), c.ttl), true
	}
	return "", false
}

// decide chooses the action once the agent reported the check's state.
// wantRegister is set when Update asked to republish self.
func (c *ttlCore) decide(now time.Time, st checkState, wantRegister bool) (ttlAction, string) {
	switch st {
	case checkCritical:
		return actDead, "the agent reports our TTL check critical: other nodes may have reported us down"
	case checkMissing:
		if since := now.Sub(c.lastOK); since >= c.reapAfter {
			return actDead, fmt.Sprintf("our check is gone and was last refreshed %v ago, beyond DeregisterCriticalAfter (%v): it may have been reaped after going critical", since.Round(time.Millisecond), c.reapAfter)
		}
		return actRegister, "the agent forgot our registration (restarted?)"
	}
	if wantRegister {
		return actRegister, "update"
	}
	return actRefresh, ""
}

// done records the outcome of an action sent at sent and answered at end.
// fresh is set when the action registered a check the agent did not have,
// so no previous TTL timer could have expired before it. It returns a
// reason to declare self dead when the action succeeded too late: if the
// agent may have processed it after the previous refresh's TTL ran out,
// the check may have been critical in between, for others to see.
func (c *ttlCore) done(sent, end time.Time, err error, fresh bool) (string, bool) {
	c.lastEnd = end
	if err != nil {
		c.failing = true
		return "", false
	}
	if !fresh {
		if since := end.Sub(c.lastOK); since >= c.ttl {
			return fmt.Sprintf("a refresh completed %v after the previous one, more than the TTL %v: the check may have expired in between", since.Round(time.Millisecond), c.ttl), true
		}
	}
	c.lastOK = sent
	c.failing = false
	return "", false
}

// failed records an attempt that could not ask the agent.
func (c *ttlCore) failed(end time.Time) {
	c.lastEnd = end
	c.failing = true
}

// updateReq is an Update waiting for the updater to republish self.
type updateReq struct {
	self  Member
	reply chan error // buffered
}

// runUpdater refreshes self's TTL check every RefreshEvery until Stop or
// until it declares self dead. It is the only goroutine that registers
// self after Start, so Stop can rule out re-registration by waiting for
// it. Its HTTP calls are not cancelled by Stop (a cancelled registration
// may still be applied by the agent after Stop's deregistration); each is
// bounded by RefreshEvery instead.
func (p *Consul) runUpdater(ctx context.Context, core *ttlCore, self Member) {
	defer close(p.updaterDone)
	ticker := time.NewTicker(p.cfg.RefreshEvery)
	defer ticker.Stop()
	for {
		var req *updateReq
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case r := <-p.updates:
			req = &r
		}
		if p.beforeTick != nil {
			p.beforeTick(ctx)
		}
		if ctx.Err() != nil {
			// Stop began (select picks at random among ready cases).
			if req != nil {
				req.reply <- p.updaterExitErr()
			}
			return
		}
		next := self
		if req != nil {
			next = req.self
		}
		err := p.attempt(core, next, req != nil)
		if req != nil {
			req.reply <- err
		}
		if errors.Is(err, ErrDeclaredDead) {
			return
		}
		if err == nil {
			self = next
		}
	}
}

// attempt runs one refresh (or registration, for Update). It returns
// ErrDeclaredDead when self was found dead.
func (p *Consul) attempt(core *ttlCore, self Member, wantRegister bool) error {
	if reason, dead := core.stalled(time.Now()); dead {
		p.declareDead(reason)
		return ErrDeclaredDead
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.RefreshEvery)
	defer cancel()
	st, err := p.checkState(ctx)
	if err != nil {
		core.failed(time.Now())
		p.updErrs.fail(err)
		return fmt.Errorf("discovery: consul: reading our TTL check: %w", err)
	}
	sent := time.Now()
	act, reason := core.decide(sent, st, wantRegister)
	switch act {
	case actDead:
		p.declareDead(reason)
		return ErrDeclaredDead
	case actRegister:
		err = p.client.Agent().ServiceRegisterOpts(registration(p.cfg, self, api.HealthPassing), api.ServiceRegisterOpts{}.WithContext(ctx))
		if err == nil && st == checkMissing {
			p.log.Warn("discovery: consul: re-registered with the same incarnation", "reason", reason, "id", p.id)
		}
	default:
		err = p.client.Agent().UpdateTTLOpts(p.checkID, "refreshed by mailroom", api.HealthPassing, (&api.QueryOptions{}).WithContext(ctx))
	}
	if reason, dead := core.done(sent, time.Now(), err, st == checkMissing); dead {
		p.declareDead(reason)
		return ErrDeclaredDead
	}
	if err != nil {
		p.updErrs.fail(err)
		return fmt.Errorf("discovery: consul: refreshing our TTL check: %w", err)
	}
	p.updErrs.ok()
	p.leases.extend(sent, p.cfg.TTL)
	return nil
}

// checkState asks the local agent for self's TTL check.
func (p *Consul) checkState(ctx context.Context) (checkState, error) {
	checks, err := p.client.Agent().ChecksWithFilterOpts(fmt.Sprintf("CheckID == %q", p.checkID), (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		var se api.StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			return checkMissing, nil
		}
		return 0, err
	}
	c, ok := checks[p.checkID]
	switch {
	case !ok:
		return checkMissing, nil
	case c.Status == api.HealthCritical:
		return checkCritical, nil
	}
	return checkPassing, nil
}
