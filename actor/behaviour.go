package actor

import (
	"errors"
	"fmt"
)

// Behaviours and the stash. An actor changes how it handles what comes
// next with Become (replace the current behaviour) or BecomeStacked
// (push one, Unbecome pops it); with none the actor's own Receive
// handles messages. Stash sets the message being handled aside, its
// sender, its trace, its headers and, for a request, the duty to answer
// it, kept; UnstashAll hands everything stashed back, in the order it
// was stashed, ahead of every message not handled yet. The stash holds
// at most Props.StashLimit messages (default DefaultStashLimit): Stash
// past it returns ErrStashFull and the message stays the one being
// handled (it is not dropped; answer it, stash something else later, or
// let it go as any message).
//
// What survives a restart: nothing of either. A supervisor's restart is
// a new instance, which starts with its own Receive and an empty stash;
// what the old instance had stashed is handled as if the actor had died
// with it in its mailbox: sends are dead letters, requests fail with
// ErrNoProcess, may have executed (the old instance took them). Receive
// middleware wraps every behaviour.

// DefaultStashLimit is the stash bound of an actor whose
// Props.StashLimit is 0.
const DefaultStashLimit = 1000

// ErrStashFull is Stash's error when the stash holds its limit.
var ErrStashFull = errors.New("mailroom: stash full")

// Become makes f handle the messages that follow, in place of the current
// behaviour (the top of the stack, or the actor's Receive).
func (c *Context) Become(f ReceiveFunc) {
	x := c.proc.extra()
	if n := len(x.become); n > 0 {
		x.become[n-1] = f
		return
	}
	x.become = append(x.become, f)
}

// BecomeStacked makes f handle the messages that follow until Unbecome,
// which restores the behaviour it replaced.
func (c *Context) BecomeStacked(f ReceiveFunc) {
	x := c.proc.extra()
	x.become = append(x.become, f)
}

// Unbecome restores the behaviour the last BecomeStacked (or Become)
// replaced; with none it does nothing (the actor's Receive stays).
func (c *Context) Unbecome() {
	x := c.proc.ext
	if x == nil || len(x.become) == 0 {
		return
	}
	x.become[len(x.become)-1] = nil
	x.become = x.become[:len(x.become)-1]
}

// Stash sets the message being handled aside until UnstashAll. A request
// stashed is answered later, when it is handled again. It returns
// ErrStashFull when the stash holds Props.StashLimit messages, and an
// error when there is no message to stash (in Started, Stopping or
// Stopped, or twice for one message).
func (c *Context) Stash() error {
	p := c.proc
	if c.env == nil || (p.ext != nil && p.ext.stashedCur) {
		return errors.New("actor: Stash: no message to stash")
	}
	switch c.env.msg.(type) {
	case Started, Stopping, Stopped, Restarting:
		return fmt.Errorf("actor: Stash: %T is not stashed", c.env.msg)
	}
	x := p.extra()
	if len(x.stash) >= p.stashLimit() {
		return fmt.Errorf("%w: %d messages (Props.StashLimit)", ErrStashFull, len(x.stash))
	}
	e := *c.env
	if c.tr != nil {
		t := *c.tr
		t.msg = e.msg
		e.msg = &t
	}
	x.stash = append(x.stash, e)
	c.env.reply = nil // answered when it is handled again
	x.stashedCur = true
	return nil
}

// UnstashAll hands every stashed message back, in the order stashed,
// ahead of every message not handled yet: they are handled after the
// current one, by the behaviour in effect then.
func (c *Context) UnstashAll() {
	x := c.proc.ext
	if x == nil || len(x.stash) == 0 {
		return
	}
	x.unstashed = append(x.unstashed, x.stash...)
	clear(x.stash)
	x.stash = x.stash[:0]
}

// StashLen is how many messages are stashed.
func (c *Context) StashLen() int {
	if c.proc.ext == nil {
		return 0
	}
	return len(c.proc.ext.stash)
}

func (p *process) stashLimit() int {
	if p.ext != nil && p.ext.stashLimit > 0 {
		return p.ext.stashLimit
	}
	return DefaultStashLimit
}

// behave hands the message being handled to the behaviour in effect: the
// top of the Become stack, or a's Receive.
func (p *process) behave(a Actor) {
	if x := p.ext; x != nil && len(x.become) > 0 {
		x.become[len(x.become)-1](&p.ctx)
		return
	}
	a.Receive(&p.ctx)
}

// runUnstashed handles what UnstashAll handed back, before the next
// message of the mailbox, while the actor lives.
func (p *process) runUnstashed() {
	for p.state == stateAlive && p.ext != nil && len(p.ext.unstashed) > 0 {
		x := p.ext
		e := x.unstashed[0]
		x.unstashed[0] = envelope{}
		x.unstashed = x.unstashed[1:]
		if len(x.unstashed) == 0 {
			x.unstashed = nil
		}
		p.invoke(&e)
	}
}

// dropStash ends what an ending actor had stashed or not yet handled
// again: sends are dead letters, requests fail, may have executed.
func (p *process) dropStash() {
	x := p.ext
	if x == nil {
		return
	}
	for _, list := range [][]envelope{x.unstashed, x.stash} {
		for i := range list {
			e := &list[i]
			if t, ok := e.msg.(*traced); ok {
				e.msg = t.msg
			}
			if e.reply != nil {
				e.reply.Reply(nil, &Error{Op: "request", Node: p.sys.name, Incarnation: p.sys.inc, Target: p.pid.String(), Err: diedBecause(p.reason), Outcome: MayHaveExecuted})
			}
			p.sys.deadLetter(p.pid, e.sender, e.msg, ErrNoProcess)
		}
	}
	x.stash, x.unstashed = nil, nil
}
