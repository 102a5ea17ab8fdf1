package actor

import (
	"context"
	"time"

	"github.com/mailroom-go/mailroom/internal/actorstats"
	"github.com/mailroom-go/mailroom/internal/future"
	"github.com/mailroom-go/mailroom/internal/hooks"
	"google.golang.org/protobuf/proto"
)

// hookFuncs is what the actor core offers mailroom's own packages and
// nobody else (transports, the supervisor, the read side):
// internal/actorhooks documents each field and offers it typed; a user
// never sees them. It is an alias of a struct literal, field for field
// the one actorhooks.Funcs aliases, so that the two are one type and
// actorhooks' assertion of hooks.Actor holds; a field added here goes
// there too, in the same order, or every program panics at init.
type hookFuncs = struct {
	SetTransport     func(s *System, t transport)
	DeliverLocal     func(s *System, ctx context.Context, sender, to PID, msg any, r Replier) error
	DeliverNamed     func(s *System, ctx context.Context, sender PID, name string, msg any, r Replier) error
	DeliverTraced    func(s *System, ctx, tc context.Context, sender, to PID, name string, msg any, r Replier) error
	DeliverRun       func(s *System, ctx context.Context, to PID, name string, msgs []any, senders []PID) (int, error)
	Inject           func(s *System, to PID, msg any) error
	WatchLocal       func(s *System, watcher, target PID)
	UnwatchLocal     func(s *System, watcher, target PID)
	NotifyTerminated func(s *System, watcher, pid PID, reason error)
	CastLocal        func(s *System, ctx context.Context, fn string, arg proto.Message, done func()) bool
	Function         func(s *System, name string) (Handler, bool)
	RunHandler       func(s *System, ctx context.Context, op, fn string, h Handler, arg proto.Message) (proto.Message, error)
	DeadLetter       func(s *System, to, sender PID, msg any, reason error)
	NewFuture        func(s *System) *future.Future
	RestartProps     func(p *Props, r Restarting) *Props
	SampleMailboxes  func(s *System, top int, maxAge time.Duration) actorstats.Sample
	Value            func(s *System, key any, mk func() any) any
	FailedOutcomes   func(s *System) [3]uint64
	Counters         func(s *System) actorstats.Counters
	WrapReply        func(c *Context, wrap func(Replier) Replier) bool
}

func init() {
	hooks.Actor = &hookFuncs{
		SetTransport:     (*System).setTransport,
		DeliverLocal:     (*System).deliverLocal,
		DeliverNamed:     (*System).deliverNamed,
		DeliverTraced:    (*System).deliverTraced,
		DeliverRun:       (*System).deliverRun,
		Inject:           (*System).inject,
		WatchLocal:       (*System).watchLocal,
		UnwatchLocal:     (*System).unwatchLocal,
		NotifyTerminated: (*System).notifyLocal,
		CastLocal:        (*System).castLocal,
		Function:         (*System).function,
		RunHandler:       (*System).runHandler,
		DeadLetter:       (*System).deadLetter,
		NewFuture:        (*System).newFuture,
		RestartProps:     (*Props).asRestartOf,
		SampleMailboxes:  (*System).sampleMailboxes,
		Value:            (*System).value,
		FailedOutcomes:   (*System).failedOutcomes,
		Counters:         (*System).lifetimeCounters,
		WrapReply:        (*Context).wrapReply,
	}
}
