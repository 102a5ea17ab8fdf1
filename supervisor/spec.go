package supervisor

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/mailroom-go/mailroom/actor"
)

// Strategy says which children a supervisor restarts when one of them has
// to be restarted.
type Strategy int

const (
	// OneForOne restarts only the child that ended. The default.
	OneForOne Strategy = iota
	// OneForAll stops every other running child, in reverse start order,
	// then restarts them all in start order.
	OneForAll
	// RestForOne stops the running children started after the one that
	// ended, in reverse start order, then restarts it and them in start
	// order.
	RestForOne
)

// String names the strategy, e.g. "one-for-all".
func (s Strategy) String() string {
	switch s {
	case OneForOne:
		return "one-for-one"
	case OneForAll:
		return "one-for-all"
	case RestForOne:
		return "rest-for-one"
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// RestartType says when a child that ended is restarted.
type RestartType int

const (
	// Permanent children are always restarted, after a crash and after a
	// normal stop. The default.
	Permanent RestartType = iota
	// Transient children are restarted only when they end abnormally (a
	// Terminated with a non-nil Reason). After a normal stop the spec is
	// kept and the child shows as not running.
	Transient
	// Temporary children are never restarted: when one ends, for any
	// reason, its spec is removed, and its end does not count toward the
	// restart intensity. A temporary child stopped as part of a
	// OneForAll or RestForOne group restart is removed too.
	Temporary
)

// String names the restart type, e.g. "transient".
func (r RestartType) String() string {
	switch r {
	case Permanent:
		return "permanent"
	case Transient:
		return "transient"
	case Temporary:
		return "temporary"
	}
	return fmt.Sprintf("RestartType(%d)", int(r))
}

// Defaults for the zero values of Spec and ChildSpec fields.
const (
	// DefaultIntensity is the restart intensity used when Spec.Intensity is 0.
	DefaultIntensity = 3
	// DefaultPeriod is the intensity window used when Spec.Period is 0.
	DefaultPeriod = 5 * time.Second
	// DefaultShutdown is how long a worker child is given to stop when
	// ChildSpec.Shutdown is 0. A child marked Supervisor gets no bound.
	DefaultShutdown = 5 * time.Second
)

// ChildSpec says how a supervisor starts, restarts and stops one child.
type ChildSpec struct {
	// ID names the child within its supervisor, for the dynamic API and
	// the logs. Required; unique within the supervisor.
	ID string
	// Props says how to start the child. Required. For a nested
	// supervisor use Props(subSpec), or build the whole ChildSpec with
	// Nested.
	Props *actor.Props
	// Name, when set, registers each instance of the child under this
	// name (actor.Context.SpawnNamed); every restart registers it again.
	Name string
	// Restart says when the child is restarted. Default Permanent.
	Restart RestartType
	// Shutdown is how long the supervisor waits for the child to stop
	// before it logs a warning and moves on. 0 means DefaultShutdown for
	// a worker and no bound for a child marked Supervisor (a subtree
	// bounds the stop of each of its own children). Negative is invalid.
	Shutdown time.Duration
	// Supervisor marks a child that is itself a supervisor: it is
	// reported by WhichChildren and changes the default Shutdown.
	Supervisor bool
	// Backoff, when set, delays this child's restarts after repeated
	// failures (exponential, jittered, capped; see Backoff for how it
	// counts in the intensity rules). Default nil: restart at once.
	Backoff *Backoff
}

// Nested returns the ChildSpec of a nested supervisor running spec: a
// permanent child marked Supervisor, with no shutdown bound. Adjust the
// returned value's fields as needed.
func Nested(id string, spec Spec) ChildSpec {
	return ChildSpec{ID: id, Props: Props(spec), Supervisor: true}
}

// Validate reports the first problem with c as a *SpecError naming the
// field (prefixed "ChildSpec.").
func (c ChildSpec) Validate() error { return c.validate("ChildSpec") }

func (c ChildSpec) validate(at string) error {
	switch {
	case c.ID == "":
		return &SpecError{Field: at + ".ID", Problem: "is empty; every child needs an ID"}
	case c.Props == nil:
		return &SpecError{Field: at + ".Props", Problem: fmt.Sprintf("is nil for child %q", c.ID)}
	case c.Props.Producer == nil:
		return &SpecError{Field: at + ".Props.Producer", Problem: fmt.Sprintf("is nil for child %q", c.ID)}
	case c.Restart < Permanent || c.Restart > Temporary:
		return &SpecError{Field: at + ".Restart", Problem: fmt.Sprintf("is %d for child %q, want Permanent, Transient or Temporary", int(c.Restart), c.ID)}
	case c.Shutdown < 0:
		return &SpecError{Field: at + ".Shutdown", Problem: fmt.Sprintf("is %s for child %q, want 0 (default) or more", c.Shutdown, c.ID)}
	case c.Backoff != nil:
		return c.Backoff.validate(at, c.ID)
	}
	return nil
}

// shutdownBound is how long to wait for the child to stop; ok is false
// for no bound.
func (c ChildSpec) shutdownBound() (d time.Duration, ok bool) {
	switch {
	case c.Shutdown > 0:
		return c.Shutdown, true
	case c.Supervisor:
		return 0, false
	}
	return DefaultShutdown, true
}

// Spec is a supervisor's configuration: its strategy, its restart
// intensity and its children in start order. Zero fields mean the
// documented defaults.
type Spec struct {
	// Strategy says which children are restarted together. Default
	// OneForOne.
	Strategy Strategy
	// Intensity is the most restarts allowed within Period; one more and
	// the supervisor gives up (stops its children and ends with an
	// *IntensityError). 0 means DefaultIntensity (3); a supervisor always
	// allows at least one restart. Use Temporary children for "never
	// restart". Negative is invalid.
	Intensity int
	// Period is the sliding window for Intensity. 0 means DefaultPeriod
	// (5s). Negative is invalid.
	Period time.Duration
	// Children are started in this order at init and stopped in the
	// reverse order.
	Children []ChildSpec
	// Logger receives the supervisor's own lines (a child started,
	// restarted, given up on). Default: the System's logger, with the
	// supervisor's pid. mailroom's own trees (the proxy pool's) pass one
	// labelled with their layer that keeps routine lines at Debug.
	Logger *slog.Logger

	now func() time.Time // the intensity clock; nil means time.Now (tests inject one)
}

// Validate reports the first problem with s as a *SpecError naming the
// field, e.g. "Children[2].ID".
func (s Spec) Validate() error {
	if s.Strategy < OneForOne || s.Strategy > RestForOne {
		return &SpecError{Field: "Strategy", Problem: fmt.Sprintf("is %d, want OneForOne, OneForAll or RestForOne", int(s.Strategy))}
	}
	if s.Intensity < 0 {
		return &SpecError{Field: "Intensity", Problem: fmt.Sprintf("is %d, want 0 (default %d) or more", s.Intensity, DefaultIntensity)}
	}
	if s.Period < 0 {
		return &SpecError{Field: "Period", Problem: fmt.Sprintf("is %s, want 0 (default %s) or more", s.Period, DefaultPeriod)}
	}
	ids := make(map[string]int, len(s.Children))
	names := make(map[string]int)
	for i, c := range s.Children {
		at := fmt.Sprintf("Children[%d]", i)
		if err := c.validate(at); err != nil {
			return err
		}
		if j, dup := ids[c.ID]; dup {
			return &SpecError{Field: at + ".ID", Problem: fmt.Sprintf("%q is also the ID of Children[%d]", c.ID, j)}
		}
		ids[c.ID] = i
		if c.Name == "" {
			continue
		}
		if j, dup := names[c.Name]; dup {
			return &SpecError{Field: at + ".Name", Problem: fmt.Sprintf("%q is also the Name of Children[%d]", c.Name, j)}
		}
		names[c.Name] = i
	}
	return nil
}

// withDefaults returns a copy of s with zero fields filled in and its own
// Children slice.
func (s Spec) withDefaults() Spec {
	if s.Intensity == 0 {
		s.Intensity = DefaultIntensity
	}
	if s.Period == 0 {
		s.Period = DefaultPeriod
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.Children = append([]ChildSpec(nil), s.Children...)
	return s
}
