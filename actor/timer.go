package actor

import (
	"fmt"
	"time"
)

// Timers. An actor's timers deliver to the actor itself, as messages in
// its mailbox, handled by Receive like any other (a BatchReceiver gets
// them in Receive too). They belong to the actor instance that started
// them: all of them end when it stops, crashes or is replaced by its
// supervisor (a restart is a new instance: its timers start afresh).
//
// A stopped timer never delivers, even when its message was already due
// or waiting in the mailbox: the actor checks each timer message when it
// takes it and drops those whose timer was stopped meanwhile. A
// repeating timer (SendEvery, a periodic or cron timer) has at most one
// tick waiting in the mailbox: an actor slower than its timer gets fewer
// ticks, never a backlog.
//
// A System runs all of its timers on one scheduler (a heap with one
// pending Clock.AfterFunc, for the earliest deadline): a pending timer
// costs about 100 bytes and no goroutine. Time is Config.Clock's, so a
// test drives timers with a fake clock.

// Timer is a handle on a timer. The zero Timer is a timer that never
// fires.
type Timer struct {
	t  *timer
	sc *scheduler
}

// Stop stops the timer and reports whether that prevented a delivery: a
// one-shot timer not yet delivered (pending, or its message waiting in
// the mailbox), or a repeating timer not yet stopped. False when it had
// been stopped already or, for a one-shot timer, delivered. Called from
// the actor's own goroutine (its Receive), it is exact: nothing of the
// timer is delivered after it. From another goroutine it is safe, but a
// delivery the actor had already begun goes on.
func (h Timer) Stop() bool {
	if h.t == nil {
		return false
	}
	return h.sc.stop(h.t)
}

// ReceiveTimeout is delivered to an actor that has had no message for
// the duration set with Context.SetReceiveTimeout or Props.ReceiveTimeout,
// and again after each further such duration of silence.
type ReceiveTimeout struct{}

// rtTick is the message of the timer armed for a receive timeout: the
// actor turns it into ReceiveTimeout once the silence is long enough.
type rtTick struct{}

// newTimer returns a timer of p delivering msg.
func (p *process) newTimer(msg any) *timer {
	p.extra()
	return &timer{proc: p, msg: msg, idx: -1}
}

func (p *process) startTimer(t *timer, d time.Duration) Timer {
	sc := &p.sys.timers
	sc.start(t, sc.now()+int64(max(d, 0)))
	return Timer{t: t, sc: sc}
}

// SendAfter delivers msg to this actor once, after d, unless the timer
// is stopped first.
func (c *Context) SendAfter(d time.Duration, msg any) Timer {
	p := c.proc
	return p.startTimer(p.newTimer(msg), d)
}

// SendEvery delivers msg to this actor every d, the first time after d,
// until the timer is stopped. d must be positive (a smaller one is taken
// as 1 ms). Ticks keep to the period from the start; a tick missed while
// the previous one still waits in the mailbox is skipped.
func (c *Context) SendEvery(d time.Duration, msg any) Timer {
	p := c.proc
	t := p.newTimer(msg)
	t.period = int64(max(d, time.Millisecond))
	return p.startTimer(t, time.Duration(t.period))
}

// SendCron delivers msg to this actor at every time the cron expression
// expr names, until the timer is stopped. expr is a standard 5-field
// expression (minute, hour, day of month, month, day of week; names such
// as MON and JAN, ranges, lists and steps), a descriptor (@hourly,
// @daily, @weekly, @monthly, @yearly, @every 1h30m), optionally after
// CRON_TZ=<IANA zone> and a space; without a zone times are in the
// location of Config.Clock's Now (the local zone for the wall clock).
// An expression that does not parse, or names no time in the next five
// years, is an error and starts nothing.
func (c *Context) SendCron(expr string, msg any) (Timer, error) {
	p := c.proc
	cs, first, err := p.sys.timers.parseFirst(expr)
	if err != nil {
		return Timer{}, err
	}
	t := p.newTimer(msg)
	t.cron = cs
	sc := &p.sys.timers
	sc.start(t, first)
	return Timer{t: t, sc: sc}, nil
}

// StartTimer delivers msg to this actor once, after d, as the timer key:
// a timer already running under key is stopped and replaced (its
// message, even one already waiting in the mailbox, is never delivered).
// key must be comparable (a map key). Call it from Receive.
func (c *Context) StartTimer(key any, d time.Duration, msg any) {
	p := c.proc
	p.startTimer(p.keyedTimer(key, msg), d)
}

// StartPeriodicTimer is StartTimer delivering msg every d (SendEvery).
func (c *Context) StartPeriodicTimer(key any, d time.Duration, msg any) {
	p := c.proc
	t := p.keyedTimer(key, msg)
	t.period = int64(max(d, time.Millisecond))
	p.startTimer(t, time.Duration(t.period))
}

// StartCronTimer is StartTimer delivering msg at the times expr names
// (SendCron). On an error the timer running under key, if any, is left
// as it was.
func (c *Context) StartCronTimer(key any, expr string, msg any) error {
	p := c.proc
	cs, first, err := p.sys.timers.parseFirst(expr)
	if err != nil {
		return err
	}
	t := p.keyedTimer(key, msg)
	t.cron = cs
	p.sys.timers.start(t, first)
	return nil
}

// CancelTimer stops the timer running under key, if any (its message,
// even one already waiting in the mailbox, is never delivered). It
// reports whether there was one that could still deliver.
func (c *Context) CancelTimer(key any) bool {
	x := c.proc.ext
	if x == nil {
		return false
	}
	t, ok := x.keyed[key]
	if !ok {
		return false
	}
	delete(x.keyed, key)
	return c.proc.sys.timers.stop(t)
}

// TimerActive reports whether a timer under key can still deliver.
func (c *Context) TimerActive(key any) bool {
	x := c.proc.ext
	if x == nil {
		return false
	}
	t, ok := x.keyed[key]
	return ok && t.state.Load()&tStopped == 0
}

// keyedTimer makes a timer under key, stopping the one it replaces.
func (p *process) keyedTimer(key any, msg any) *timer {
	t := p.newTimer(msg)
	t.key = key
	t.state.Store(tKeyed)
	x := p.ext
	if old, ok := x.keyed[key]; ok {
		p.sys.timers.stop(old)
	}
	if x.keyed == nil {
		x.keyed = make(map[any]*timer)
	}
	x.keyed[key] = t
	return t
}

// SetReceiveTimeout asks for a ReceiveTimeout message once the actor has
// had no message for d, and again after every further d of silence;
// every message the actor handles other than ReceiveTimeout itself
// (timer messages included) starts the silence again. 0 turns it off.
// It replaces Props.ReceiveTimeout for this instance.
func (c *Context) SetReceiveTimeout(d time.Duration) { c.proc.setReceiveTimeout(d) }

func (p *process) setReceiveTimeout(d time.Duration) {
	x := p.extra()
	if x.rtTimer != nil {
		p.sys.timers.stop(x.rtTimer)
		x.rtTimer = nil
	}
	x.rt = max(d, 0)
	if x.rt == 0 {
		return
	}
	x.rtLast = p.sys.timers.now()
	p.armReceiveTimeout(x.rtLast + int64(x.rt))
}

func (p *process) armReceiveTimeout(at int64) {
	x := p.ext
	t := p.newTimer(rtTick{})
	x.rtTimer = t
	p.sys.timers.start(t, at)
}

// timerMessage is what the timer message t delivers to Receive, when it
// still delivers (it was not stopped meanwhile): called by the actor as
// it takes t from its mailbox.
func (p *process) timerMessage(t *timer) (any, bool) {
	if t.repeats() {
		if t.clearQueued()&tStopped != 0 {
			return nil, false
		}
		return t.msg, true
	}
	if !t.markStopped() {
		return nil, false
	}
	x := p.ext
	if t.state.Load()&tKeyed != 0 && x.keyed[t.key] == t {
		delete(x.keyed, t.key)
	}
	if _, ok := t.msg.(rtTick); ok {
		return p.receiveTimeoutDue(t)
	}
	return t.msg, true
}

// receiveTimeoutDue decides on the receive timeout's timer t, which is
// due: ReceiveTimeout when the actor has been silent for the whole
// timeout (and the timer is armed again for the next one), else nothing
// and the timer is armed for the end of the current silence.
func (p *process) receiveTimeoutDue(t *timer) (any, bool) {
	x := p.ext
	if x.rtTimer != t || x.rt == 0 {
		return nil, false
	}
	now := p.sys.timers.now()
	if end := x.rtLast + int64(x.rt); now < end {
		p.armReceiveTimeout(end)
		return nil, false
	}
	p.armReceiveTimeout(now + int64(x.rt))
	return ReceiveTimeout{}, true
}

// handled notes that the actor handled msg, for its receive timeout.
func (x *procExt) handled(sc *scheduler, msg any) {
	if x.rt == 0 {
		return
	}
	if _, ok := msg.(ReceiveTimeout); !ok {
		x.rtLast = sc.now()
	}
}

// SendAfter sends msg to to after d, from the System's root handle (the
// target sees no sender), unless the timer is stopped first: for code
// outside any actor. to may be on any node. The send happens on a
// goroutine of the System's, so a send that waits (a bounded Block
// mailbox, a link being dialed) holds up no other timer. A timer still
// pending when the System stops is a dead letter (ErrStopped). Stop
// reports whether it prevented the send; a send already made cannot be
// taken back.
func (s *System) SendAfter(d time.Duration, to PID, msg any) Timer {
	sc := &s.timers
	t := &timer{msg: &sysSend{to: to, msg: msg}, idx: -1}
	sc.start(t, sc.now()+int64(max(d, 0)))
	if t.state.Load()&tStopped != 0 {
		s.deadLetter(to, PID{}, msg, fmt.Errorf("timer started after the node stopped: %w", ErrStopped))
	}
	return Timer{t: t, sc: sc}
}
