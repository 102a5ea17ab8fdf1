package hooks

// Each slot is set by package actor's init; its comment gives the type.
// internal/actorhooks asserts the types and documents the hooks.
var (
	// SetTransport is a func(*actor.System, actorhooks.Transport).
	SetTransport any

	// DeliverLocal is a
	// func(*actor.System, context.Context, sender, to actor.PID, msg any, r actor.Replier) error.
	DeliverLocal any

	// DeliverNamed is a
	// func(*actor.System, context.Context, sender actor.PID, name string, msg any, r actor.Replier) error.
	DeliverNamed any

	// DeliverTraced is a
	// func(*actor.System, ctx, tc context.Context, sender, to actor.PID, name string, msg any, r actor.Replier) error.
	DeliverTraced any

	// DeliverRun is a
	// func(*actor.System, context.Context, to actor.PID, name string, msgs []any, senders []actor.PID) (int, error).
	DeliverRun any

	// Inject is a func(*actor.System, to actor.PID, msg any) error.
	Inject any

	// WatchLocal and UnwatchLocal are func(*actor.System, watcher, target actor.PID).
	WatchLocal, UnwatchLocal any

	// NotifyTerminated is a func(*actor.System, watcher, pid actor.PID, reason error).
	NotifyTerminated any

	// CastLocal is a
	// func(*actor.System, context.Context, fn string, arg proto.Message, done func()) bool.
	CastLocal any

	// Function is a func(*actor.System, name string) (actor.Handler, bool).
	Function any

	// RunHandler is a
	// func(*actor.System, context.Context, op, fn string, h actor.Handler, arg proto.Message) (proto.Message, error).
	RunHandler any

	// DeadLetter is a func(*actor.System, to, sender actor.PID, msg any, reason error).
	DeadLetter any

	// NewFuture is a func(*actor.System) *future.Future.
	NewFuture any

	// RestartProps is a func(*actor.Props, actor.Restarting) *actor.Props.
	RestartProps any

	// SampleMailboxes is a
	// func(*actor.System, top int, maxAge time.Duration) actorstats.Sample.
	SampleMailboxes any

	// Value is a func(*actor.System, key any, mk func() any) any.
	Value any

	// FailedOutcomes is a func(*actor.System) [3]uint64.
	FailedOutcomes any

	// Counters is a func(*actor.System) actorstats.Counters.
	Counters any

	// WrapReply is a func(*actor.Context, wrap func(actor.Replier) actor.Replier) bool.
	WrapReply any
)

// PoolHost is a
//
//	func(*remote.Node) poolpath.Host
//
// set by package remote (not actor) when it is initialised: the pooled
// path (proxypool) reaches a node through it, so that remote.Node
// exports no pool hooks. proxypool imports remote, so it is set before
// proxypool's own initialisation reads it.
var PoolHost any
