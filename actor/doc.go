// Package actor is mailroom's actor core: a System (one node), PIDs,
// actors with mailboxes, registered names, watches, dead letters, a
// registry of named functions, and the error taxonomy every layer shares.
//
// # Usage
//
// Start a System, spawn actors from Props (or a plain function), and talk
// to them with Send (fire and forget) and Request (wait for the answer an
// actor gives with Context.Respond):
//
//	sys, err := actor.Start(actor.Config{Name: "orders-1"})
//	pid, err := sys.SpawnFunc(func(c *actor.Context) {
//		if q, ok := c.Message().(string); ok {
//			c.Respond("hello " + q)
//		}
//	})
//	reply, err := sys.Request(ctx, pid, "world")
//	greeting, err := actor.RequestAs[string](ctx, sys, pid, "world") // typed
//	err = sys.Stop(ctx)
//
// # Callers
//
// Three things send, request and call: the System itself (its root
// handle), a Sender handle (System.NewSender: an identity of its own, for
// a goroutine whose messages must keep their order), and an actor's
// Context (the actor is the sender). All three are a Caller, so code that
// only sends takes a Caller and works from anywhere. RequestAs,
// RequestNamedAs and CallAs are Request, RequestNamed and Call with the
// answer typed. To hand a PID to another node inside a message, put an
// actor/pidpb PID in it.
//
// A message may come with a trace, Context.Context: the span of the
// sender's ctx (a Request's, SendContext's, CastContext's), carried to
// other nodes too (remote.Config.TracerProvider). What an actor sends,
// casts, requests or calls while it handles it continues that trace.
// Send and Cast take no ctx; SendContext and CastContext (on the System
// and on a Sender) are the same carrying a ctx's trace.
//
// # The caller's duties
//
//   - An actor's Receive runs on one goroutine at a time; never share the
//     *Context outside it. Use Context.Defer to answer a request later.
//   - Receive must not block for long: an actor handles one message at a
//     time. A Request from inside an actor blocks that actor; RequestAsync does
//     not (its continuation runs later as a message).
//   - Spawn runs the child's Started on the caller's goroutine; a child
//     whose Started sends a Request to its parent deadlocks.
//   - Messages to other nodes must be proto.Message values whose types are
//     registered with RegisterTypes on both nodes.
//   - Stop the System with Stop(ctx) when done; it waits for every actor.
//
// # Scheduling
//
// A mailbox holds no goroutine while idle. The first message into an
// empty mailbox schedules one, which drains the mailbox in batches and
// yields the processor every Throughput messages, then exits when the
// mailbox is empty. System messages (stop, watch) overtake user messages;
// Terminated notifications keep their order behind the messages the dead
// actor sent before it ended.
//
// # Timers
//
// An actor's timers deliver to the actor itself, as messages: SendAfter
// (once), SendEvery (periodic), SendCron (a standard 5-field cron
// expression), the keyed StartTimer, StartPeriodicTimer and
// StartCronTimer (starting a key again replaces its timer; CancelTimer
// stops it), and a receive timeout (SetReceiveTimeout or
// Props.ReceiveTimeout: a ReceiveTimeout message after that long without
// a message). They belong to the instance that started them and all end
// when it stops, crashes or is restarted. A stopped timer never
// delivers, even one whose message was already waiting in the mailbox;
// a repeating one never queues a second tick behind the first.
// System.SendAfter is for goroutines, to any PID. One scheduler per
// System runs them all (one pending Config.Clock.AfterFunc, for the
// earliest deadline; no goroutine per timer), on Config.Clock, so tests
// drive time with a fake clock.
//
// # Failure
//
// A panic in Receive is a crash: it is logged with its value and stack,
// the request being handled (if any) gets a *PanicError, the actor's
// children are stopped, it receives Stopped, and its parent (which watches
// its children implicitly) and watchers get Terminated with the
// *PanicError as Reason. Restarting is the supervisor package's job.
//
// # Outcomes
//
// Every error the runtime returns is classified by Outcome: NotExecuted
// (safe to retry), MayHaveExecuted (check before retrying), or Executed (a
// rejection, *RemoteError, or a crash, *PanicError). errors.Is and
// Outcome never disagree: an error matches a sentinel only when its
// outcome is the sentinel's, and its text ends with that one outcome.
//
// A handler (a registered function, or an actor answering a request with
// RespondError or a deferred Reply) decides what its caller gets:
//
//   - a plain error, or Reject(code, msg): a rejection, executed;
//   - NotExecutedError(err): nothing was done, safe to retry;
//   - MayHaveExecutedError(err): part of the work may have been done;
//   - an error from a mailroom call the handler made, returned as-is or
//     wrapped with %w: the same outcome one hop further (api → orders →
//     stock: if stock never ran the call, api is told "not executed");
//   - ctx.Err() once the handler's ctx ended: MayHaveExecuted, matching
//     the context error, the same as the caller gets when its own ctx ends
//     first; NotExecutedError(ctx.Err()) when the handler did nothing.
//
// # Wire codes
//
// An error crosses to another node as a code (ErrorCode), from which the
// caller's side rebuilds the sentinel; SentinelForCode maps back:
//
//	ErrUnreachable       unreachable        not executed
//	ErrNoProcess         no_process         not executed (queued requests too); may have executed: handled, unanswered, then the actor died
//	ErrNoFunction        no_function        not executed
//	ErrNoService         no_service         not executed
//	ErrNoVersion         no_version         not executed
//	ErrNotSent           not_sent           not executed
//	ErrNodeDown          node_down          may have executed
//	ErrMailboxFull       mailbox_full       not executed
//	ErrOverloaded        overloaded         not executed
//	ErrStopped           stopped            not executed
//	ErrDeadlineExceeded  deadline_exceeded  not executed
//	ErrNameTaken         name_taken         not executed
//	ErrBadMessage        bad_message        not executed (unless the handler ran and only its answer could not travel)
//	ErrDraining          draining           not executed
//	ErrReplyType         reply_type         executed
//	context.DeadlineExceeded  context_deadline  may have executed
//	context.Canceled          context_canceled  may have executed
//
// A Reject code is the handler's own and travels as given; a rejection
// whose code is a sentinel's does not match that sentinel.
package actor
