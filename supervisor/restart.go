package supervisor

import (
	"errors"
	"time"

	"github.com/mailroom-go/mailroom/actor"
)

// retryRestart is sent by the supervisor to itself after a restart failed
// to spawn: the restart is tried again as a later message, so requests
// and terminations are not starved, and each failure counts toward the
// intensity.
type retryRestart struct{}

// terminated handles the end of a child.
func (s *supervisor) terminated(c *actor.Context, m actor.Terminated) {
	ch, ok := s.byPID[m.PID]
	if !ok {
		return // an instance we stopped ourselves, or not a child of ours
	}
	delete(s.byPID, m.PID)
	ch.pid, ch.prev, ch.reason = actor.PID{}, m.PID, m.Reason
	switch {
	case ch.spec.Restart == Temporary:
		s.log.Debug("supervisor: temporary child ended; removed", "child", ch.spec.ID, "child_pid", m.PID.String(), "reason", m.Reason)
		s.remove(ch)
		return
	case ch.spec.Restart == Transient && m.Reason == nil:
		s.log.Info("supervisor: transient child stopped normally; not restarted", "child", ch.spec.ID, "child_pid", m.PID.String())
		return
	}
	if !s.restarts.add() {
		s.giveUp(c, ch, m.PID, m.Reason)
		return
	}
	s.restartGroup(c, ch, m.Reason, s.backoff(ch))
}

// restartGroup stops the running children the strategy restarts along
// with failed, in reverse start order, then starts them all again in
// start order.
//
// After a delay (a Backoff), the stopped children start when the
// supervisor's backoff timer fires instead.
func (s *supervisor) restartGroup(c *actor.Context, failed *child, reason error, delay time.Duration) {
	group := s.group(failed)
	for i := len(group) - 1; i >= 0; i-- {
		g := group[i]
		if g == failed || g.pid.IsZero() {
			continue
		}
		s.stopChild(c, g)
		g.reason = &SiblingError{Child: failed.spec.ID, Reason: reason}
		if g.spec.Restart == Temporary {
			s.remove(g)
			continue
		}
		g.pending = true
	}
	failed.pending = true
	if delay > 0 {
		s.log.Info("supervisor: restart of child delayed by its backoff", "child", failed.spec.ID, "previous", failed.prev.String(), "delay", delay, "failures", failed.failures)
		if !s.backingOff || !c.TimerActive(backoffKey{}) {
			c.StartTimer(backoffKey{}, delay, backoffDue{})
		}
		s.backingOff = true
		return
	}
	s.startPending(c)
}

// group is the children restarted together with failed, in start order.
func (s *supervisor) group(failed *child) []*child {
	switch s.spec.Strategy {
	case OneForAll:
		return append([]*child(nil), s.children...)
	case RestForOne:
		for i, ch := range s.children {
			if ch == failed {
				return append([]*child(nil), s.children[i:]...)
			}
		}
	}
	return []*child{failed}
}

// startPending restarts, in start order, every child owed a restart. A
// failed spawn counts as another failure: the supervisor gives up if that
// exceeds the intensity, and otherwise tries again with a message to
// itself, leaving the children after the failed one pending.
func (s *supervisor) startPending(c *actor.Context) {
	if s.backingOff {
		return // the backoff timer starts them
	}
	for _, ch := range s.children {
		if !ch.pending {
			continue
		}
		r := actor.Restarting{Previous: ch.prev, Reason: ch.reason, Count: ch.count + 1}
		pid, err := s.spawn(c, ch, &r)
		if err != nil {
			if errors.Is(err, actor.ErrStopped) {
				s.log.Info("supervisor: node stopping; restart abandoned", "child", ch.spec.ID, "previous", ch.prev.String())
				return
			}
			s.log.Warn("supervisor: restart of child failed", "child", ch.spec.ID, "previous", ch.prev.String(), "reason", err)
			if !s.restarts.add() {
				s.giveUp(c, ch, ch.prev, err)
				return
			}
			c.Send(c.Self(), retryRestart{})
			return
		}
		ch.count++
		s.setRunning(ch, pid)
		s.log.Info("supervisor: restarted child", "child", ch.spec.ID, "previous", ch.prev.String(),
			"child_pid", pid.String(), "reason", ch.reason, "count", ch.count, "strategy", s.spec.Strategy.String())
	}
}

// giveUp ends the supervisor: the intensity is exceeded. Its children are
// stopped in reverse start order, then it exits with an *IntensityError.
func (s *supervisor) giveUp(c *actor.Context, ch *child, pid actor.PID, reason error) {
	err := &IntensityError{
		Supervisor: c.Self(), Child: ch.spec.ID, ChildPID: pid,
		Restarts: s.restarts.count(), Intensity: s.spec.Intensity, Period: s.spec.Period, Reason: reason,
	}
	s.log.Error("supervisor: restart intensity exceeded; giving up", "child", ch.spec.ID, "child_pid", pid.String(),
		"reason", reason, "restarts", err.Restarts, "intensity", err.Intensity, "period", err.Period)
	s.gaveUp = true
	for _, x := range s.children {
		x.pending = false
	}
	s.stopAll(c)
	c.Exit(err)
}

// restartWindow counts restarts within a sliding period.
type restartWindow struct {
	intensity int
	period    time.Duration
	now       func() time.Time
	times     []time.Time // restarts within the period, oldest first
}

// add records a restart now and reports whether it is within the
// intensity.
func (w *restartWindow) add() bool {
	now := w.now()
	w.times = append(w.times, now)
	cut := now.Add(-w.period)
	i := 0
	for i < len(w.times) && w.times[i].Before(cut) {
		i++
	}
	w.times = append(w.times[:0], w.times[i:]...)
	return len(w.times) <= w.intensity
}

// count is the number of restarts in the window as of the last add.
func (w *restartWindow) count() int { return len(w.times) }

// recent is the number of restarts within the period now, without
// recording one.
func (w *restartWindow) recent() int {
	if w.now == nil {
		return 0 // not initialised: the supervisor has not started
	}
	cut := w.now().Add(-w.period)
	n := 0
	for _, t := range w.times {
		if !t.Before(cut) {
			n++
		}
	}
	return n
}
