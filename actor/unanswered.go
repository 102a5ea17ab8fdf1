package actor

import (
	"sync/atomic"

	"github.com/mailroom-go/mailroom/internal/future"
)

// unanswered tracks the requests an actor has taken but not answered, so
// that its death answers them: ErrNoProcess, may have executed. Owned by
// the process's goroutine.
type unanswered struct {
	list    []*trackedReply
	compact int // length at which answered entries are next pruned
}

// trackedReply answers once, from any goroutine: the Replier of
// Context.Defer. An error is what RespondError would make of it.
type trackedReply struct {
	r    Replier
	sys  *System
	self PID
	done atomic.Bool
}

func (t *trackedReply) Reply(msg any, err error) {
	if t.done.CompareAndSwap(false, true) {
		if err != nil {
			err = t.sys.handlerError("request", t.self.String(), err)
		}
		t.r.Reply(msg, err)
		return
	}
	if f, ok := t.r.(*future.Future); ok {
		f.CountLate()
	}
}

// completed reports whether the request needs no answer any more: answered
// here, or its waiter gave up (a future claimed by a cancelled caller).
func (t *trackedReply) completed() bool {
	if t.done.Load() {
		return true
	}
	c, ok := t.r.(interface{ Completed() bool })
	return ok && c.Completed()
}

func (u *unanswered) add(r Replier, sys *System, self PID) *trackedReply {
	t := &trackedReply{r: r, sys: sys, self: self}
	if len(u.list) >= u.compact {
		kept := u.list[:0]
		for _, x := range u.list {
			if !x.completed() {
				kept = append(kept, x)
			}
		}
		clear(u.list[len(kept):])
		u.list = kept
		u.compact = max(16, 2*len(kept))
	}
	u.list = append(u.list, t)
	return t
}

func (u *unanswered) failAll(err *Error, _ PID) {
	err.Outcome = MayHaveExecuted
	for _, t := range u.list {
		if t.done.CompareAndSwap(false, true) {
			t.r.Reply(nil, err)
		}
	}
	u.list = nil
}
