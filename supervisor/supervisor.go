package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
)

// Props returns the supervisor running spec as an actor, to spawn as a
// child of another actor (or use Nested for a child of a supervisor). The
// spec is validated in the supervisor's Started: a bad spec, or a child
// that fails to start, makes Spawn fail with an *actor.PanicError whose
// Value is the *SpecError or *StartError. Start returns those directly.
func Props(spec Spec) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &supervisor{spec: spec} })
}

// Start validates spec and starts a top-level supervisor running it. Its
// children are started, in order, before Start returns. If one fails to
// start, the ones already started are stopped in reverse order and Start
// returns a *StartError naming it.
func Start(sys *actor.System, spec Spec) (actor.PID, error) { return start(sys, spec, "") }

// StartNamed is Start with the supervisor registered under name.
func StartNamed(sys *actor.System, spec Spec, name string) (actor.PID, error) {
	if name == "" {
		return actor.PID{}, fmt.Errorf("supervisor: start: empty name")
	}
	return start(sys, spec, name)
}

func start(sys *actor.System, spec Spec, name string) (actor.PID, error) {
	if err := spec.Validate(); err != nil {
		return actor.PID{}, err
	}
	var pid actor.PID
	var err error
	if name == "" {
		pid, err = sys.Spawn(Props(spec))
	} else {
		pid, err = sys.SpawnNamed(Props(spec), name)
	}
	if err != nil {
		return actor.PID{}, spawnReason(err)
	}
	return pid, nil
}

// supervisor is the actor. All of its state is owned by its Receive.
type supervisor struct {
	spec     Spec // defaults filled in at init
	log      *slog.Logger
	children []*child // start order
	byID     map[string]*child
	byPID    map[actor.PID]*child // running children only
	restarts restartWindow
	gaveUp   bool // ending with an *IntensityError; ignore the rest
	// backingOff: a restart waits for a Backoff timer; owed restarts
	// start when it fires (backoffDue), not before.
	backingOff bool
	clock      actor.Clock // the System's: Backoff's time
	failed     bool        // init failed: exiting with the error
}

// child is one entry of the child list.
type child struct {
	spec    ChildSpec
	pid     actor.PID // zero when not running
	prev    actor.PID // the last instance that ended
	reason  error     // why prev ended
	count   int       // restarts made so far (Restarting.Count)
	pending bool      // should be running; a restart is owed
	// started is when the running instance started (System clock), and
	// failures the run of failures Backoff counts.
	started  time.Time
	failures int
}

// Receive is the supervisor's behaviour.
func (s *supervisor) Receive(c *actor.Context) {
	if _, ok := c.Message().(actor.Stopped); ok {
		registryOf(c.System()).remove(c.Self())
		return
	}
	if s.gaveUp {
		return // children stopped, exit requested: ignore the rest
	}
	switch m := c.Message().(type) {
	case actor.Started:
		s.init(c)
	case actor.Terminated:
		s.terminated(c, m)
	case retryRestart:
		s.startPending(c)
	case backoffDue:
		s.backingOff = false
		s.startPending(c)
	case actor.Stopping:
		s.stopAll(c)
	case startChildReq, terminateChildReq, restartChildReq, deleteChildReq, whichChildrenReq:
		c.Respond(s.handle(c, m))
	case treeReq:
		c.Respond(s.tree(c))
	}
}

// init starts the children in order; on a failure it stops the started
// ones in reverse order and exits with the error, which Spawn returns.
func (s *supervisor) init(c *actor.Context) {
	if err := s.spec.Validate(); err != nil {
		s.failed = true
		c.Exit(err)
		return
	}
	s.spec = s.spec.withDefaults()
	s.clock = c.System().Config().Clock
	s.log = c.Logger()
	if s.spec.Logger != nil {
		s.log = s.spec.Logger.With("pid", c.Self().String())
	}
	s.byID = make(map[string]*child, len(s.spec.Children))
	s.byPID = make(map[actor.PID]*child, len(s.spec.Children))
	s.restarts = restartWindow{intensity: s.spec.Intensity, period: s.spec.Period, now: s.spec.now}
	for _, cs := range s.spec.Children {
		ch := &child{spec: cs}
		pid, err := s.spawn(c, ch, nil)
		if err != nil {
			s.log.Error("supervisor: child failed to start; stopping the others", "child", cs.ID, "reason", err)
			s.stopAll(c)
			s.failed = true
			c.Exit(&StartError{Child: cs.ID, Reason: err})
			return
		}
		s.add(ch, pid)
	}
	registryOf(c.System()).add(c.Self(), c.Parent())
}

// spawn starts an instance of ch; r, when set, makes it a restart.
func (s *supervisor) spawn(c *actor.Context, ch *child, r *actor.Restarting) (actor.PID, error) {
	// The run starts before the child can: read after the spawn, the clock
	// could already be past what the child did first.
	ch.started = s.clock.Now()
	props := ch.spec.Props
	if r != nil {
		props = actorhooks.RestartProps(props, *r)
	}
	var pid actor.PID
	var err error
	if ch.spec.Name != "" {
		pid, err = c.SpawnNamed(props, ch.spec.Name)
	} else {
		pid, err = c.Spawn(props)
	}
	if err != nil {
		return actor.PID{}, spawnReason(err)
	}
	if r != nil {
		registryOf(c.System()).restarts.Add(1)
	}
	return pid, nil
}

// add appends a started child to the list.
func (s *supervisor) add(ch *child, pid actor.PID) {
	s.children = append(s.children, ch)
	s.byID[ch.spec.ID] = ch
	s.setRunning(ch, pid)
}

// remove drops ch from the list, stopped or not.
func (s *supervisor) remove(ch *child) {
	for i, x := range s.children {
		if x == ch {
			s.children = append(s.children[:i], s.children[i+1:]...)
			break
		}
	}
	delete(s.byID, ch.spec.ID)
	if !ch.pid.IsZero() {
		delete(s.byPID, ch.pid)
	}
}

func (s *supervisor) setRunning(ch *child, pid actor.PID) {
	ch.pid, ch.pending = pid, false
	s.byPID[pid] = ch
}

// stopAll stops the running children one at a time in reverse start
// order, each within its shutdown bound.
func (s *supervisor) stopAll(c *actor.Context) {
	for i := len(s.children) - 1; i >= 0; i-- {
		s.stopChild(c, s.children[i])
	}
}

// stopChild stops ch and waits for it up to its shutdown bound. From then
// on ch is not running: a Terminated for its old PID is ignored. A child
// that does not stop in time is logged and left to the core, which stops
// it for good before the supervisor itself finishes stopping.
func (s *supervisor) stopChild(c *actor.Context, ch *child) {
	if ch.pid.IsZero() {
		return
	}
	pid := ch.pid
	delete(s.byPID, pid)
	ch.pid, ch.prev, ch.reason = actor.PID{}, pid, nil
	ctx := context.Background()
	bound, bounded := ch.spec.shutdownBound()
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	if err := c.System().StopActorWait(ctx, pid); err != nil {
		s.log.Warn("supervisor: child did not stop within its shutdown bound; moving on",
			"child", ch.spec.ID, "child_pid", pid.String(), "shutdown", bound, "err", err)
	}
}
