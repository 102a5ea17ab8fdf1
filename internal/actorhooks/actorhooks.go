package actorhooks

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorstats"
	"github.com/mailroom-go/mailroom/internal/future"
	"github.com/mailroom-go/mailroom/internal/hooks"
	"google.golang.org/protobuf/proto"
)

// Transport carries the operations of a System whose target is on another
// node. The remote package implements it and attaches itself with
// SetTransport; a System without one answers ErrUnreachable for every
// other node.
//
// Methods are called concurrently from any goroutine. sender identifies
// the caller (an actor, a Sender handle, or zero for the system's root
// handle): one sender's messages to one target keep their order. The ctx
// of Send, SendNamed and Cast carries the caller's trace context (its
// values only: it bounds nothing). Send and Cast may wait while a link
// is dialed or full; Request and Call block
// until answered, ctx ends, or liveness fails them. Watch asks for
// Terminated at the local watcher when the remote target ends or its node
// incarnation leaves; NotifyTerminated tells a remote watcher that a
// local actor ended.
//
// It is an alias of an interface literal, identical to the one package
// actor declares, so the hook's function type matches across the two
// packages.
type Transport = interface {
	Send(ctx context.Context, sender, to actor.PID, msg any) error
	SendNamed(ctx context.Context, sender actor.PID, node, name string, msg any) error
	Request(ctx context.Context, sender, to actor.PID, msg any) (any, error)
	RequestNamed(ctx context.Context, sender actor.PID, node, name string, msg any) (any, error)
	Cast(ctx context.Context, sender actor.PID, node, fn string, arg proto.Message) error
	Call(ctx context.Context, sender actor.PID, node, fn string, arg proto.Message) (proto.Message, error)
	Watch(watcher, target actor.PID)
	Unwatch(watcher, target actor.PID)
	NotifyTerminated(watcher, pid actor.PID, reason error)
}

// funcs is the struct package actor sets hooks.Actor to (its hookFuncs):
// an alias of the same struct literal, field for field, so that the two
// are one type. Parameter names do not count; field names, their order
// and their types do. A field added on one side only makes the assertion
// below panic at init, before any test or program runs.
type funcs = struct {
	SetTransport     func(sys *actor.System, t Transport)
	DeliverLocal     func(sys *actor.System, ctx context.Context, sender, to actor.PID, msg any, r actor.Replier) error
	DeliverNamed     func(sys *actor.System, ctx context.Context, sender actor.PID, name string, msg any, r actor.Replier) error
	DeliverTraced    func(sys *actor.System, ctx, tc context.Context, sender, to actor.PID, name string, msg any, r actor.Replier) error
	DeliverRun       func(sys *actor.System, ctx context.Context, to actor.PID, name string, msgs []any, senders []actor.PID) (n int, err error)
	Inject           func(sys *actor.System, to actor.PID, msg any) error
	WatchLocal       func(sys *actor.System, watcher, target actor.PID)
	UnwatchLocal     func(sys *actor.System, watcher, target actor.PID)
	NotifyTerminated func(sys *actor.System, watcher, pid actor.PID, reason error)
	CastLocal        func(sys *actor.System, ctx context.Context, fn string, arg proto.Message, done func()) (started bool)
	Function         func(sys *actor.System, name string) (actor.Handler, bool)
	RunHandler       func(sys *actor.System, ctx context.Context, op, fn string, h actor.Handler, arg proto.Message) (proto.Message, error)
	DeadLetter       func(sys *actor.System, to, sender actor.PID, msg any, reason error)
	NewFuture        func(sys *actor.System) *future.Future
	RestartProps     func(p *actor.Props, r actor.Restarting) *actor.Props
	SampleMailboxes  func(sys *actor.System, top int, maxAge time.Duration) actorstats.Sample
	Value            func(sys *actor.System, key any, mk func() any) any
	FailedOutcomes   func(sys *actor.System) [3]uint64
	Counters         func(sys *actor.System) actorstats.Counters
	WrapReply        func(c *actor.Context, wrap func(actor.Replier) actor.Replier) bool
}

// fns is package actor's, asserted once: package actor has initialised
// (this package imports it), so hooks.Actor is set.
var fns = assertFuncs(hooks.Actor)

// assertFuncs returns v as *funcs, or panics naming the first field where
// v's struct and funcs part.
func assertFuncs(v any) *funcs {
	f, ok := v.(*funcs)
	if !ok {
		panic("actorhooks: hooks.Actor does not match actorhooks.funcs: " + mismatch(reflect.TypeOf(v), reflect.TypeFor[*funcs]()))
	}
	return f
}

// mismatch says where got, the type actor set, parts from want.
func mismatch(got, want reflect.Type) string {
	if got == nil || got.Kind() != reflect.Pointer || got.Elem().Kind() != reflect.Struct {
		return fmt.Sprintf("it is a %v, not a pointer to a struct", got)
	}
	g, w := got.Elem(), want.Elem()
	for i := range max(g.NumField(), w.NumField()) {
		switch {
		case i >= g.NumField():
			return fmt.Sprintf("field %d, %s, is missing from actor's", i, w.Field(i).Name)
		case i >= w.NumField():
			return fmt.Sprintf("field %d, %s, of actor's is not in actorhooks'", i, g.Field(i).Name)
		case g.Field(i).Name != w.Field(i).Name || g.Field(i).Type != w.Field(i).Type:
			return fmt.Sprintf("field %d is %s %v in actor's, %s %v here", i, g.Field(i).Name, g.Field(i).Type, w.Field(i).Name, w.Field(i).Type)
		}
	}
	return "the fields match but the types differ (a tag?)"
}

// Each hook is a variable holding actor's function itself, read as
// directly as a package function value: no indirection added on a send
// path.
var (
	// SetTransport attaches t as sys's transport to other nodes; nil
	// detaches it.
	SetTransport = fns.SetTransport

	// DeliverLocal hands a message from another node to the local actor
	// to. r, when not nil, receives the answer. A stale incarnation or a
	// dead actor is ErrNoProcess; the caller answers the sender. ctx bounds
	// a wait for room in a bounded Block mailbox.
	DeliverLocal = fns.DeliverLocal

	// DeliverNamed is DeliverLocal to the local actor registered as name.
	DeliverNamed = fns.DeliverNamed

	// DeliverTraced is DeliverLocal (name empty) or DeliverNamed (name
	// set) for a message that carried a trace: while the actor handles
	// it, Context.Context returns tc (the server span, or the caller's
	// remote span context).
	DeliverTraced = fns.DeliverTraced

	// DeliverRun queues msgs, in order, for one local actor: the one
	// registered as name when name is not empty, else to; senders[i] is
	// msgs[i]'s sender. One lookup and one mailbox lock for the whole run
	// (more only while a bounded Block mailbox makes it wait for room; ctx
	// bounds that wait). It returns how many were queued, and why the rest
	// were not (ErrNoProcess, ErrMailboxFull, ctx's error): the caller
	// accounts for msgs[n:].
	DeliverRun = fns.DeliverRun

	// Inject queues msg for the local actor to, ignoring its mailbox
	// bound: for a layer's own traffic that must not wait (replies through
	// a proxy, a proxy's wake-ups), whose volume is bounded elsewhere.
	// ErrNoProcess if it is gone.
	Inject = fns.Inject

	// WatchLocal registers watcher (local or remote) on the local actor
	// target; if target is gone, watcher is told at once with
	// ErrNoProcess. For a transport relaying a remote watch.
	WatchLocal = fns.WatchLocal

	// UnwatchLocal cancels a watch on the local actor target.
	UnwatchLocal = fns.UnwatchLocal

	// NotifyTerminated delivers Terminated{pid, reason} to the local actor
	// watcher, if it still watches pid (a remote actor ended, or its node
	// incarnation left).
	NotifyTerminated = fns.NotifyTerminated

	// CastLocal runs the local function fn in its own goroutine, with ctx
	// as its context. done, when not nil, is called once the cast has
	// ended, or at once when it does not start (no such function, the
	// system stops: a dead letter). It reports whether the function
	// started. For a transport replaying a remote cast.
	CastLocal = fns.CastLocal

	// Function returns the handler registered as name.
	Function = fns.Function

	// RunHandler runs h once on the calling goroutine, turning its error
	// into a *RemoteError and a panic into a *PanicError, and skipping it
	// (not executed: ErrDeadlineExceeded) when ctx's deadline has already
	// passed.
	RunHandler = fns.RunHandler

	// DeadLetter records a message that will never be delivered: counted,
	// and offered to SubscribeDeadLetters' subscribers.
	DeadLetter = fns.DeadLetter

	// NewFuture returns a future whose late replies sys counts
	// (System.LateReplies).
	NewFuture = fns.NewFuture

	// RestartProps returns a copy of p whose instance first receives r:
	// for a supervisor replacing a child.
	RestartProps = fns.RestartProps

	// SampleMailboxes walks sys's actors and returns how deep their
	// mailboxes are (a histogram, the total, the top deepest) and how many
	// messages each took since the previous sample (the top busiest, with
	// rates). A sample no older than maxAge taken for at least top is
	// shared instead of walking again. The walk takes each table shard's
	// read lock and each mailbox's lock in turn, briefly: its cost is per
	// sample and per actor, nothing per message. For the read side (the
	// observer, the metrics); rates are per interval between samples,
	// whoever took them.
	SampleMailboxes = fns.SampleMailboxes

	// Value returns what a layer keeps on sys under key (a value of an
	// unexported type of its own), made by mk the first time: for state
	// that belongs to one System, never to the package (the supervisor's
	// registry of supervisors).
	Value = fns.Value

	// FailedOutcomes counts the calls and requests made on sys (Call,
	// Request, RequestNamed, from any Caller) that returned an error, by
	// actor.Outcome: indexed by actor.Execution (Executed: the handler's
	// rejection or panic; NotExecuted; MayHaveExecuted). Counted on the
	// error path only; successes are not counted here.
	FailedOutcomes = fns.FailedOutcomes

	// Counters are sys's lifetime counters: actors spawned, actors
	// crashed (a panic in Receive), dead letters by reason (the
	// actorstats.Dead* constants). Each is an atomic bumped where the
	// event happens; nothing per message delivered.
	Counters = fns.Counters

	// WrapReply replaces the Replier of the request c is handling with
	// wrap(it), so that receive middleware sees the answer however the
	// actor gives it (Respond, RespondError, Defer, its death); false,
	// and wrap is not called, when the message is not a request.
	WrapReply = fns.WrapReply
)
