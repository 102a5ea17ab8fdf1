package supervisor

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mailroom-go/mailroom/actor"
)

// ChildInfo describes one child, as WhichChildren reports it.
type ChildInfo struct {
	ID           string
	PID          actor.PID // zero when the child is not running
	Name         string    // its registered name, or ""
	Restart      RestartType
	IsSupervisor bool // ChildSpec.Supervisor
	Restarts     int  // restarts made for this child so far
}

// Requests to the supervisor actor and its answer. Go values, so the
// dynamic API works only on the supervisor's own node.
type (
	startChildReq     struct{ spec ChildSpec }
	terminateChildReq struct{ id string }
	restartChildReq   struct{ id string }
	deleteChildReq    struct{ id string }
	whichChildrenReq  struct{}

	reply struct {
		pid      actor.PID
		children []ChildInfo
		err      error
	}
)

// StartChild adds spec at the end of sup's child list and starts it. If
// it fails to start, the spec is not added and the error is a
// *StartError. ErrIDTaken if sup already has a child with that ID.
func StartChild(ctx context.Context, sys *actor.System, sup actor.PID, spec ChildSpec) (actor.PID, error) {
	if err := spec.Validate(); err != nil {
		return actor.PID{}, err
	}
	r, err := request(ctx, sys, sup, "start child", startChildReq{spec: spec})
	return r.pid, err
}

// TerminateChild stops the running child id within its shutdown bound
// and keeps its spec (a Temporary child's spec is removed), so
// RestartChild can start it again. It is not restarted automatically,
// not even by a group restart. Stopping a child that is not running is
// not an error; ErrUnknownChild if there is no such child.
func TerminateChild(ctx context.Context, sys *actor.System, sup actor.PID, id string) error {
	_, err := request(ctx, sys, sup, "terminate child", terminateChildReq{id: id})
	return err
}

// RestartChild starts the child id again after it was terminated (or
// stopped normally, as a Transient child). The new instance receives
// Restarting. ErrChildRunning if it is running; ErrUnknownChild if there
// is no such child; a *StartError if it fails to start (that does not
// count toward the intensity).
func RestartChild(ctx context.Context, sys *actor.System, sup actor.PID, id string) (actor.PID, error) {
	r, err := request(ctx, sys, sup, "restart child", restartChildReq{id: id})
	return r.pid, err
}

// DeleteChild removes the spec of the child id, which must not be
// running. ErrChildRunning if it is; ErrUnknownChild if there is no such
// child.
func DeleteChild(ctx context.Context, sys *actor.System, sup actor.PID, id string) error {
	_, err := request(ctx, sys, sup, "delete child", deleteChildReq{id: id})
	return err
}

// WhichChildren lists sup's children in start order.
func WhichChildren(ctx context.Context, sys *actor.System, sup actor.PID) ([]ChildInfo, error) {
	r, err := request(ctx, sys, sup, "which children", whichChildrenReq{})
	return r.children, err
}

// request asks the supervisor sup and unpacks its reply.
func request(ctx context.Context, sys *actor.System, sup actor.PID, op string, msg any) (reply, error) {
	if sup.Node != sys.Name() || sup.Incarnation != sys.Incarnation() {
		return reply{}, fmt.Errorf("supervisor: %s: %s: %w", op, sup, ErrNotSupervisor)
	}
	v, err := sys.Request(ctx, sup, msg)
	if err != nil {
		return reply{}, fmt.Errorf("supervisor: %s: %w", op, err)
	}
	r, ok := v.(reply)
	if !ok {
		return reply{}, fmt.Errorf("supervisor: %s: %s answered %T: %w", op, sup, v, ErrNotSupervisor)
	}
	return r, r.err
}

// handle answers a dynamic request, inside the supervisor's Receive.
func (s *supervisor) handle(c *actor.Context, m any) reply {
	switch m := m.(type) {
	case startChildReq:
		return s.startChild(c, m.spec)
	case terminateChildReq:
		return reply{err: s.terminateChild(c, m.id)}
	case restartChildReq:
		return s.restartChild(c, m.id)
	case deleteChildReq:
		return reply{err: s.deleteChild(m.id)}
	case whichChildrenReq:
		return reply{children: s.which()}
	}
	return reply{err: fmt.Errorf("supervisor: unknown request %T", m)}
}

func (s *supervisor) startChild(c *actor.Context, spec ChildSpec) reply {
	if err := spec.Validate(); err != nil {
		return reply{err: err}
	}
	if _, taken := s.byID[spec.ID]; taken {
		return reply{err: fmt.Errorf("supervisor: start child %q: %w", spec.ID, ErrIDTaken)}
	}
	ch := &child{spec: spec}
	pid, err := s.spawn(c, ch, nil)
	if err != nil {
		return reply{err: &StartError{Child: spec.ID, Reason: err}}
	}
	s.add(ch, pid)
	level := slog.LevelInfo
	if spec.Restart == Temporary {
		level = slog.LevelDebug // temporary children come and go (one per group call)
	}
	s.log.Log(context.Background(), level, "supervisor: started child", "child", spec.ID, "child_pid", pid.String())
	return reply{pid: pid}
}

func (s *supervisor) terminateChild(c *actor.Context, id string) error {
	ch, ok := s.byID[id]
	if !ok {
		return fmt.Errorf("supervisor: terminate child %q: %w", id, ErrUnknownChild)
	}
	ch.pending = false
	s.stopChild(c, ch)
	if ch.spec.Restart == Temporary {
		s.remove(ch)
	}
	return nil
}

func (s *supervisor) restartChild(c *actor.Context, id string) reply {
	ch, ok := s.byID[id]
	if !ok {
		return reply{err: fmt.Errorf("supervisor: restart child %q: %w", id, ErrUnknownChild)}
	}
	if !ch.pid.IsZero() {
		return reply{err: fmt.Errorf("supervisor: restart child %q (%s): %w", id, ch.pid, ErrChildRunning)}
	}
	r := actor.Restarting{Previous: ch.prev, Reason: ch.reason, Count: ch.count + 1}
	pid, err := s.spawn(c, ch, &r)
	if err != nil {
		return reply{err: &StartError{Child: id, Reason: err}}
	}
	ch.count++
	s.setRunning(ch, pid)
	s.log.Info("supervisor: restarted child on request", "child", id, "previous", ch.prev.String(), "child_pid", pid.String())
	return reply{pid: pid}
}

func (s *supervisor) deleteChild(id string) error {
	ch, ok := s.byID[id]
	if !ok {
		return fmt.Errorf("supervisor: delete child %q: %w", id, ErrUnknownChild)
	}
	if !ch.pid.IsZero() {
		return fmt.Errorf("supervisor: delete child %q (%s): %w", id, ch.pid, ErrChildRunning)
	}
	s.remove(ch)
	return nil
}

func (s *supervisor) which() []ChildInfo {
	out := make([]ChildInfo, 0, len(s.children))
	for _, ch := range s.children {
		out = append(out, ChildInfo{
			ID: ch.spec.ID, PID: ch.pid, Name: ch.spec.Name, Restart: ch.spec.Restart,
			IsSupervisor: ch.spec.Supervisor, Restarts: ch.count,
		})
	}
	return out
}
