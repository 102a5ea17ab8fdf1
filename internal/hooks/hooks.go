package hooks

// DeliverRun is a
//
//	func(s *actor.System, ctx context.Context, to actor.PID, name string, msgs []any, senders []actor.PID) (int, error)
//
// that queues msgs, in order, for one local actor: the one registered as
// name when name is not empty, else to; senders[i] is msgs[i]'s sender.
// One lookup and one mailbox lock for the whole run (more only while a
// bounded Block mailbox makes it wait for room; ctx bounds that wait). It returns how many were queued, and why the rest were not
// (ErrNoProcess, ErrMailboxFull, ctx's error): the caller accounts for
// msgs[n:].
var DeliverRun any
