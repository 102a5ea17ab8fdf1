package patterns

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/supervisor"
	"google.golang.org/protobuf/proto"
)

// SupervisorName is the name the patterns supervisor is registered under
// on its node.
const SupervisorName = "patterns"

// Result is one node's success: the node (as named in the list) and the
// function's result.
type Result struct {
	Node  string
	Value proto.Message
}

// Patterns runs group calls from one node. Make it with Start; it is safe
// for concurrent use.
type Patterns struct {
	sys *actor.System
	sup actor.PID
	seq atomic.Uint64 // numbers coordinators, for their child IDs
}

// Start starts the patterns supervisor on sys, a top-level actor
// registered as SupervisorName with no permanent children: every group
// call adds a Temporary coordinator to it. It stops with sys (or with
// Stop). One per node: a second Start on the same node fails with
// actor.ErrNameTaken.
func Start(sys *actor.System) (*Patterns, error) {
	sup, err := supervisor.StartNamed(sys, supervisor.Spec{}, SupervisorName)
	if err != nil {
		return nil, fmt.Errorf("patterns: start: %w", err)
	}
	return &Patterns{sys: sys, sup: sup}, nil
}

// Supervisor is the PID of the patterns supervisor (its children are the
// running coordinators; see supervisor.WhichChildren).
func (p *Patterns) Supervisor() actor.PID { return p.sup }

// System is the node the group calls are made from.
func (p *Patterns) System() *actor.System { return p.sys }

// Stop stops the patterns supervisor and waits until it is gone or ctx
// ends. Group calls in flight end with a *CoordinatorError
// (ErrCoordinatorStopped), later ones with ErrStopped. Stopping the
// System does the same; Stop is only needed to stop patterns alone.
// Idempotent.
func (p *Patterns) Stop(ctx context.Context) error {
	if err := p.sys.StopActorWait(ctx, p.sup); err != nil {
		return fmt.Errorf("patterns: stop: %w", err)
	}
	return nil
}

// run makes one group call: it starts a coordinator under the patterns
// supervisor, asks it to begin, and waits for its answer or ctx. When
// ctx ends first the coordinator is stopped, which cancels its callers'
// calls, and run returns once it is gone.
func (p *Patterns) run(ctx context.Context, pattern string, nodes []string, fn string, arg proto.Message, o options, pol policy) answer {
	j := &job{pattern: pattern, fn: fn, nodes: nodes, arg: arg, opt: o, pol: pol, ctx: ctx}
	fail := func(reason error) answer { return answer{err: j.coordinatorError(reason)} }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if p.sys.Stopping() {
		return fail(ErrStopped)
	}
	// The supervisor answers at once; waiting for it without ctx means a
	// coordinator it started is never left without its owner's begin.
	pid, err := supervisor.StartChild(context.WithoutCancel(ctx), p.sys, p.sup, supervisor.ChildSpec{
		ID:      fmt.Sprintf("%s#%d", pattern, p.seq.Add(1)),
		Props:   newCoordinator(j),
		Restart: supervisor.Temporary,
	})
	if err != nil {
		return fail(fmt.Errorf("%w: start coordinator: %w", ErrStopped, err))
	}
	v, err := p.sys.Request(ctx, pid, begin{})
	if err == nil {
		return v.(answer)
	}
	if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		_ = p.sys.StopActorWait(context.Background(), pid)
		return fail(cerr)
	}
	// It ended before it took the request, or died without answering.
	return fail(fmt.Errorf("%w: %w", ErrCoordinatorStopped, err))
}
