package actor

import (
	"fmt"
	"time"
)

// Actor is the behaviour of an actor: Receive is called once per message,
// never concurrently, on a goroutine the runtime schedules only while the
// mailbox has work.
type Actor interface {
	Receive(c *Context)
}

// BatchReceiver is an Actor that takes its user messages in batches:
// everything waiting in its mailbox, up to BatchLimit at a time, in order.
// Lifecycle messages, Terminated, and requests still go to Receive (a
// batch is flushed first, so order holds). The slice is only valid during
// the call. An actor that pays once per batch rather than per message
// uses it: a writer that makes one database write or one network frame of
// what is waiting (mailroom's proxies do).
//
// Before each batch is taken the actor's goroutine yields once
// (runtime.Gosched), behind the goroutines already runnable: an idle
// actor woken by a sender would otherwise run right after that sender,
// ahead of the other senders, and take batches of one or two. The yield
// is the batching clock; there is no timer.
type BatchReceiver interface {
	Actor
	ReceiveBatch(c *Context, msgs []any)
	BatchLimit() int
}

// Reclaimer is an Actor that takes back the messages it will never
// process: when it ends, each user message still in its mailbox is offered
// to Reclaim (on its own goroutine, after Stopped); those it reports
// handled are not dead letters. An actor that owns work on behalf of
// others uses it to hand that work back or elsewhere (mailroom's proxies
// reroute replies and leave calls to the teardown that answers them).
type Reclaimer interface {
	Actor
	Reclaim(msg any) (handled bool)
}

// ReceiveFunc adapts a function to Actor. One function value serves every
// instance spawned from it, so it must keep no state of its own outside
// what it closes over deliberately.
type ReceiveFunc func(c *Context)

// Receive calls f.
func (f ReceiveFunc) Receive(c *Context) { f(c) }

// Producer makes a fresh Actor instance.
type Producer func() Actor

// MailboxPolicy says what a bounded mailbox does when it is full.
type MailboxPolicy int

const (
	// Block makes the sender wait until there is room (or the target dies,
	// or the system stops). The default for bounded mailboxes.
	Block MailboxPolicy = iota
	// FailFast refuses the message: Request and TrySend return
	// ErrMailboxFull, Send counts a dead letter.
	FailFast
)

func (p MailboxPolicy) String() string {
	switch p {
	case Block:
		return "block"
	case FailFast:
		return "fail-fast"
	}
	return fmt.Sprintf("MailboxPolicy(%d)", int(p))
}

// Props says how to make an actor.
type Props struct {
	// Producer makes each instance. Required.
	Producer Producer
	// MailboxBound caps the messages waiting in the mailbox; 0 means
	// unbounded. System messages never count and are never refused.
	MailboxBound int
	// MailboxPolicy applies when a bounded mailbox is full.
	MailboxPolicy MailboxPolicy
	// Throughput is how many messages one scheduling turn may process
	// before yielding the processor; 0 means the system's default.
	Throughput int
	// ReceiveTimeout, when positive, delivers a ReceiveTimeout message
	// once the actor has had no message for that long (see
	// Context.SetReceiveTimeout, which changes it for an instance).
	ReceiveTimeout time.Duration
	// ReceiveMiddleware wraps this actor's Receive, inside the System's
	// (Config.ReceiveMiddleware); SendMiddleware wraps what it sends,
	// outside the System's (Config.SendMiddleware). See middleware.go.
	ReceiveMiddleware []ReceiveMiddleware
	SendMiddleware    []SendMiddleware
	// StashLimit bounds the messages Context.Stash keeps; 0 means
	// DefaultStashLimit.
	StashLimit int

	restart *Restarting // set by supervisors for replacement instances
}

// PropsFromProducer returns Props for a producer.
func PropsFromProducer(p Producer) *Props { return &Props{Producer: p} }

// PropsFromFunc returns Props for a plain function.
func PropsFromFunc(f ReceiveFunc) *Props {
	return &Props{Producer: func() Actor { return f }}
}

// WithMailbox returns a copy of p with a bounded mailbox.
func (p *Props) WithMailbox(bound int, policy MailboxPolicy) *Props {
	q := *p
	q.MailboxBound, q.MailboxPolicy = bound, policy
	return &q
}

// WithThroughput returns a copy of p with a per-turn message budget.
func (p *Props) WithThroughput(n int) *Props {
	q := *p
	q.Throughput = n
	return &q
}

// asRestartOf returns a copy of p whose instance first receives r
// (actorhooks.RestartProps, for supervisors replacing a child).
func (p *Props) asRestartOf(r Restarting) *Props {
	q := *p
	q.restart = &r
	return &q
}

func (p *Props) validate() error {
	if p == nil || p.Producer == nil {
		return fmt.Errorf("mailroom: spawn: Props.Producer is nil")
	}
	if p.MailboxBound < 0 {
		return fmt.Errorf("mailroom: spawn: Props.MailboxBound is %d, want 0 (unbounded) or more", p.MailboxBound)
	}
	if p.MailboxPolicy != Block && p.MailboxPolicy != FailFast {
		return fmt.Errorf("mailroom: spawn: Props.MailboxPolicy is %d, want Block or FailFast", int(p.MailboxPolicy))
	}
	if p.Throughput < 0 {
		return fmt.Errorf("mailroom: spawn: Props.Throughput is %d, want 0 (default) or more", p.Throughput)
	}
	if p.ReceiveTimeout < 0 {
		return fmt.Errorf("mailroom: spawn: Props.ReceiveTimeout is %v, want 0 (none) or more", p.ReceiveTimeout)
	}
	return nil
}
