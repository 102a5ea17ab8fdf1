package supervisor

import (
	"errors"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/actor"
)

// Sentinel errors. The dynamic API wraps them with the operation and the
// child ID; branch with errors.Is.
var (
	// ErrInvalidSpec is wrapped by every *SpecError.
	ErrInvalidSpec = errors.New("supervisor: invalid spec")
	// ErrUnknownChild: the supervisor has no child with that ID.
	ErrUnknownChild = errors.New("supervisor: no such child")
	// ErrIDTaken: StartChild with an ID the supervisor already has
	// (running or not; DeleteChild it first).
	ErrIDTaken = errors.New("supervisor: child ID already in use")
	// ErrChildRunning: RestartChild or DeleteChild of a running child
	// (TerminateChild it first).
	ErrChildRunning = errors.New("supervisor: child is running")
	// ErrNotSupervisor: the actor asked is not a supervisor, or not a
	// local one.
	ErrNotSupervisor = errors.New("supervisor: not a local supervisor")
)

// SpecError is a Spec or ChildSpec that cannot work. Field names the
// offending field, e.g. "Children[1].ID" or "ChildSpec.Props".
type SpecError struct {
	Field   string
	Problem string
}

// Error says which field is wrong and why.
func (e *SpecError) Error() string {
	return "supervisor: invalid spec: " + e.Field + " " + e.Problem
}

// Unwrap returns ErrInvalidSpec.
func (e *SpecError) Unwrap() error { return ErrInvalidSpec }

// StartError is a child that could not be started: at the supervisor's
// init (the supervisor then fails to start) or by StartChild or
// RestartChild. Reason is what Spawn returned: an *actor.PanicError when
// the child's Started panicked, a *StartError or *SpecError when the
// child is a supervisor that failed its own init, or an *actor.Error
// (e.g. wrapping actor.ErrNameTaken).
type StartError struct {
	Child  string
	Reason error
}

// Error names the child and the reason.
func (e *StartError) Error() string {
	return fmt.Sprintf("supervisor: start child %q: %s", e.Child, e.Reason.Error())
}

// Unwrap returns Reason.
func (e *StartError) Unwrap() error { return e.Reason }

// IntensityError is the reason a supervisor ends with when it gives up:
// more than Intensity restarts within Period. A parent supervisor sees it
// as its child's abnormal termination. Reason is the last failure: how
// the child ended (nil for a permanent child that stopped normally), or
// the error of its failed restart.
type IntensityError struct {
	Supervisor actor.PID     // the supervisor that gave up
	Child      string        // the child whose failure exceeded the intensity
	ChildPID   actor.PID     // that child's last instance
	Restarts   int           // restarts counted within Period, the last one included
	Intensity  int           // the limit in effect
	Period     time.Duration // the window in effect
	Reason     error
}

// Error names the supervisor, the child, the count, the window and the
// last reason.
func (e *IntensityError) Error() string {
	return fmt.Sprintf("supervisor: %s gave up: child %q (%s) needed restart %d within %s, more than the intensity of %d: %s",
		e.Supervisor, e.Child, e.ChildPID, e.Restarts, e.Period, e.Intensity, reasonText(e.Reason))
}

// Unwrap returns Reason.
func (e *IntensityError) Unwrap() error { return e.Reason }

// SiblingError is the Restarting.Reason of a child that was running fine
// and was stopped and restarted because its sibling Child failed
// (OneForAll, RestForOne). Reason is how the sibling ended.
type SiblingError struct {
	Child  string
	Reason error
}

// Error names the failed sibling and how it ended.
func (e *SiblingError) Error() string {
	return fmt.Sprintf("supervisor: restarted with sibling %q, which ended: %s", e.Child, reasonText(e.Reason))
}

// Unwrap returns Reason.
func (e *SiblingError) Unwrap() error { return e.Reason }

func reasonText(err error) string {
	if err == nil {
		return "normal stop"
	}
	return err.Error()
}

// spawnReason returns the error a failed Spawn of a child means: a
// nested supervisor fails its init by panicking with a *StartError or a
// *SpecError, which the core wraps in an *actor.PanicError (that does not
// unwrap); this package's own errors are taken back out.
func spawnReason(err error) error {
	var pe *actor.PanicError
	if !errors.As(err, &pe) {
		return err
	}
	switch v := pe.Value.(type) {
	case *StartError:
		return v
	case *SpecError:
		return v
	}
	return err
}
