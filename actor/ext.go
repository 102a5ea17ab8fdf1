package actor

import "time"

// procExt is the part of a process that only some actors use: a batch
// buffer, timers, a receive timeout. It is allocated the first time the
// actor needs it (extra), so an actor that uses none of it costs one nil
// pointer, and it is owned by the process's goroutine like the rest of
// the process, except where a field says otherwise.
type procExt struct {
	chunk []any // a BatchReceiver's reused batch buffer

	// timers lists the actor's timers that can still fire (linked through
	// timer.prev and timer.next), so that its end cancels them. Guarded
	// by its System's scheduler lock (scheduler.mu), not by the process.
	timers *timer
	// keyed are the timers started by key (StartTimer and the like).
	keyed map[any]*timer

	// The receive timeout (SetReceiveTimeout): rt is its length (0: off),
	// rtTimer the timer armed for it, rtLast the scheduler time of the
	// last message the actor handled.
	rt      time.Duration
	rtTimer *timer
	rtLast  int64

	// send is the actor's send middleware chain (Props.SendMiddleware
	// over the System's), nil when Props has none.
	send SendFunc

	// Behaviours and the stash (behaviour.go): become is the Become
	// stack (top last), stash what Stash set aside, unstashed what
	// UnstashAll handed back and is not handled yet, stashLimit
	// Props.StashLimit (0: the default), stashedCur whether the message
	// being handled was stashed.
	become     []ReceiveFunc
	stash      []envelope
	unstashed  []envelope
	stashLimit int
	stashedCur bool
}

// extra returns p.ext, allocating it the first time.
func (p *process) extra() *procExt {
	if p.ext == nil {
		p.ext = &procExt{}
	}
	return p.ext
}
