package patterns

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/proto"
)

// job is one group call, fixed when it starts. Read-only once the
// coordinator is spawned; its callers read it too.
type job struct {
	pattern string
	fn      string
	nodes   []string
	arg     proto.Message
	opt     options
	pol     policy          // owned by the coordinator's Receive
	ctx     context.Context // the owner's ctx: its values and deadline
}

// coordinatorError is the error naming j and reason.
func (j *job) coordinatorError(reason error) *CoordinatorError {
	return &CoordinatorError{Pattern: j.pattern, Function: j.fn, Nodes: j.nodes, Arg: j.arg, Reason: reason}
}

// begin is the owner's request to a coordinator: run the call and answer
// with an answer.
type begin struct{}

// report is a caller's last word to its coordinator: the outcome of its
// call (or, for a cast, that the cast is queued).
type report struct {
	v   proto.Message
	err error
}

// coordinator runs one group call: it spawns (and, as their parent,
// watches) one caller per entry the policy asks for, feeds their results
// to the policy and answers the owner's begin request, which it deferred.
// After the answer it waits for the callers still running, discarding
// their results, and stops. Everything here is owned by its Receive.
type coordinator struct {
	job      *job
	reply    actor.Replier // the owner's deferred request; nil before begin
	answered bool
	stopping bool
	ctx      context.Context // the callers' ctx: the owner's, detached from its cancellation
	cancel   context.CancelFunc
	callers  map[actor.PID]*slot
}

// slot is the entry a live caller works for.
type slot struct {
	entry    int
	cast     bool
	reported bool
}

func newCoordinator(j *job) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &coordinator{job: j, callers: make(map[actor.PID]*slot)}
	})
}

// Receive is the coordinator's behaviour.
func (k *coordinator) Receive(c *actor.Context) {
	defer k.crashed(c)
	switch m := c.Message().(type) {
	case begin:
		k.begin(c)
	case report:
		k.report(c, c.Sender(), m)
	case actor.Terminated:
		k.terminated(c, m)
	case actor.Stopping, actor.Stopped:
		// Killed, or stopped with the node: the owner learns it, and the
		// callers' calls are cancelled before they are stopped. After a
		// normal end both are no-ops.
		k.abort(ErrCoordinatorStopped)
		if k.cancel != nil {
			k.cancel()
		}
	}
}

// crashed answers the owner when Receive panics, then lets the panic
// go on so the runtime handles the crash (callers stopped, supervisor
// told).
func (k *coordinator) crashed(c *actor.Context) {
	v := recover()
	if v == nil {
		return
	}
	k.abort(&actor.PanicError{Op: "coordinator", Node: c.System().Name(), Target: c.Self().String(), Value: v, Stack: debug.Stack()})
	panic(v)
}

func (k *coordinator) begin(c *actor.Context) {
	if k.reply != nil {
		return
	}
	k.reply = c.Defer()
	k.ctx, k.cancel = detach(k.job.ctx)
	if h := k.job.opt.hooks; h != nil && h.coordinator != nil {
		h.coordinator(c.Self())
	}
	k.apply(c, k.job.pol.begin())
}

// detach returns a ctx with ctx's values and deadline but not its
// cancellation: callers whose results are no longer wanted finish their
// call even when the owner cancels its ctx after the answer. Before the
// answer the owner's cancellation stops the coordinator, whose Stopping
// cancels the returned ctx.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(base, d)
	}
	return context.WithCancel(base)
}

// apply carries out a step of the policy.
func (k *coordinator) apply(c *actor.Context, s step) {
	for _, i := range s.call {
		k.spawn(c, i, false)
	}
	if s.done {
		k.answer(s.ans)
	}
	for _, i := range s.cast {
		k.spawn(c, i, true)
	}
	k.maybeStop(c)
}

// spawn starts the caller for entry i. A caller that cannot be spawned
// (the node is stopping) is a lost caller: the entry's result is
// ErrCallerLost.
func (k *coordinator) spawn(c *actor.Context, i int, cast bool) {
	pid, err := c.Spawn(newCaller(k.job, i, cast, k.ctx))
	if err != nil {
		if !cast {
			k.result(c, i, nil, fmt.Errorf("%w: spawn: %w", ErrCallerLost, err))
		}
		return
	}
	k.callers[pid] = &slot{entry: i, cast: cast}
	if h := k.job.opt.hooks; h != nil && h.caller != nil {
		h.caller(k.job.nodes[i], pid)
	}
}

func (k *coordinator) report(c *actor.Context, from actor.PID, r report) {
	s, ok := k.callers[from]
	if !ok || s.reported {
		return
	}
	s.reported = true
	if s.cast {
		return
	}
	if h := k.job.opt.hooks; h != nil && h.report != nil {
		h.report(k.job.nodes[s.entry])
	}
	k.result(c, s.entry, r.v, r.err)
}

// terminated handles the end of a caller: one that had not reported is
// lost, and its entry counts as unreachable.
func (k *coordinator) terminated(c *actor.Context, t actor.Terminated) {
	s, ok := k.callers[t.PID]
	if !ok {
		return
	}
	delete(k.callers, t.PID)
	if !s.reported && !s.cast {
		s.reported = true
		k.result(c, s.entry, nil, callerLost(t.PID, t.Reason))
	}
	k.maybeStop(c)
}

// result feeds the outcome of entry i to the policy. A call failed by
// the callers' own ctx ending (the owner's deadline) ends the group call
// with that reason, whatever the policy would make of it.
func (k *coordinator) result(c *actor.Context, i int, v proto.Message, err error) {
	if err != nil && !k.answered {
		if cerr := k.ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			k.abort(cerr)
		}
	}
	k.apply(c, k.job.pol.result(i, v, err))
}

// answer completes the owner's request, once.
func (k *coordinator) answer(a answer) {
	if k.answered || k.reply == nil {
		return
	}
	k.answered = true
	k.reply.Reply(a, nil)
}

// abort answers the owner with a *CoordinatorError, unless it has its
// answer already.
func (k *coordinator) abort(reason error) {
	k.answer(answer{err: k.job.coordinatorError(reason)})
}

// maybeStop ends the coordinator once it has answered and its last
// caller is gone.
func (k *coordinator) maybeStop(c *actor.Context) {
	if k.answered && len(k.callers) == 0 && !k.stopping {
		k.stopping = true
		c.Stop(c.Self())
	}
}
