package actor

import "github.com/mailroom-go/mailroom/internal/hooks"

// What the actor core offers mailroom's own packages and nobody else
// (transports, the supervisor, test harnesses): internal/actorhooks gives
// them these, typed and documented; a user never sees them.
func init() {
	hooks.SetTransport = (*System).setTransport
	hooks.DeliverLocal = (*System).deliverLocal
	hooks.DeliverNamed = (*System).deliverNamed
	hooks.DeliverTraced = (*System).deliverTraced
	hooks.DeliverRun = (*System).deliverRun
	hooks.Inject = (*System).inject
	hooks.WatchLocal = (*System).watchLocal
	hooks.UnwatchLocal = (*System).unwatchLocal
	hooks.NotifyTerminated = (*System).notifyLocal
	hooks.CastLocal = (*System).castLocal
	hooks.Function = (*System).function
	hooks.RunHandler = (*System).runHandler
	hooks.DeadLetter = (*System).deadLetter
	hooks.NewFuture = (*System).newFuture
	hooks.RestartProps = (*Props).asRestartOf
	hooks.SampleMailboxes = (*System).sampleMailboxes
	hooks.Value = (*System).value
	hooks.FailedOutcomes = (*System).failedOutcomes
	hooks.Counters = (*System).lifetimeCounters
	hooks.WrapReply = (*Context).wrapReply
}
