package actor

import "context"

// watch registers watcher (a local actor) for target's termination.
func (s *System) watch(watcher, target PID) {
	if target.Node != s.name {
		if r := s.transport(); r != nil {
			r.Watch(watcher, target)
			return
		}
		s.notifyTerminated(watcher, target, NewError("watch", target.Node, target.Incarnation, target.String(), ErrUnreachable))
		return
	}
	s.watchLocal(watcher, target)
}

// unwatch cancels a watch of watcher (a local actor) on target.
func (s *System) unwatch(watcher, target PID) {
	if target.Node != s.name {
		if r := s.transport(); r != nil {
			r.Unwatch(watcher, target)
		}
		return
	}
	if p := s.local(target); p != nil {
		p.pushSys(sysUnwatch{watcher: watcher})
	}
}

// watchLocal registers watcher (local or remote) on the local actor
// target; if target is gone, watcher is told at once with ErrNoProcess
// (actorhooks.WatchLocal).
func (s *System) watchLocal(watcher, target PID) {
	p := s.local(target)
	if p == nil || !p.pushSys(sysWatch{watcher: watcher}) {
		s.notifyTerminated(watcher, target, NewError("watch", s.name, target.Incarnation, target.String(), ErrNoProcess))
	}
}

// unwatchLocal cancels a watch on the local actor target
// (actorhooks.UnwatchLocal).
func (s *System) unwatchLocal(watcher, target PID) {
	if p := s.local(target); p != nil {
		p.pushSys(sysUnwatch{watcher: watcher})
	}
}

// notifyTerminated tells watcher that pid ended with reason.
func (s *System) notifyTerminated(watcher, pid PID, reason error) {
	if watcher.Node != s.name {
		if r := s.transport(); r != nil {
			r.NotifyTerminated(watcher, pid, reason)
		}
		return
	}
	s.notifyLocal(watcher, pid, reason)
}

// notifyLocal delivers Terminated{pid, reason} to the local actor
// watcher, if it still watches pid (actorhooks.NotifyTerminated: a remote
// actor ended, or its node incarnation left).
func (s *System) notifyLocal(watcher, pid PID, reason error) {
	p := s.local(watcher)
	if p == nil {
		return // the watcher is gone; its watch died with it
	}
	sched, _ := p.mb.push(context.Background(), envelope{msg: &terminatedMsg{pid: pid, reason: reason}, sender: pid}, true)
	if sched {
		p.sys.runners.start(p)
	}
}
