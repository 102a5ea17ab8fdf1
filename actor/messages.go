package actor

// Lifecycle messages, delivered to an actor's Receive by the runtime.
//
// Every actor instance first receives Started (preceded by Restarting when a
// supervisor started it to replace an earlier instance). When it is asked to
// stop it receives Stopping, then its children are stopped and waited for,
// then it receives Stopped, its last message. An actor that crashes (panics)
// receives no further messages; its children are stopped and Stopped is
// still delivered so it can release resources.

// Started is the first message of every actor instance.
type Started struct{}

// Restarting is delivered to a new instance, just before Started, when a
// supervisor spawned it to replace an earlier one. Previous is the PID of
// the instance it replaces; Reason is why that one ended (nil for a normal
// stop), Count how many restarts its supervisor has made for this child.
type Restarting struct {
	Previous PID
	Reason   error
	Count    int
}

// Stopping is delivered when the actor is asked to stop, before its
// children are stopped.
type Stopping struct{}

// Stopped is the last message an actor instance receives, after its
// children have terminated.
type Stopped struct{}

// Terminated tells a watcher that an actor it watched is gone. Reason is nil
// for a normal stop, a *PanicError for a crash, ErrNoProcess when the actor
// was already gone when the watch was set, and wraps ErrNodeDown when the
// actor's node incarnation left. A parent watches its children implicitly.
type Terminated struct {
	PID    PID
	Reason error
}

// PoisonPill stops the receiving actor after the messages queued before it,
// like a normal stop.
type PoisonPill struct{}

// system messages: never seen by Receive; processed by the runtime first.
type (
	sysStop    struct{ reason error }
	sysWatch   struct{ watcher PID }
	sysUnwatch struct{ watcher PID }
)
