package actor

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

type procState uint8

const (
	stateAlive      procState = iota
	stateStopping             // told to stop or crashed; waiting for children
	stateFinalizing           // children gone; Stopped being delivered
	stateDead                 // finalized; mailbox closed
)

// process is one actor: its mailbox and the state the runtime keeps for it.
// Everything below mb is owned by the goroutine currently running the
// process (at most one at a time, handed over through mb.scheduled), so
// it needs no lock: watches, children and stops all arrive as messages.
type process struct {
	sys        *System
	pid        PID
	parent     *process // nil for a top-level actor
	actor      Actor
	throughput int
	mb         mailbox
	ctx        Context

	batch   BatchReceiver // set when the actor takes batches
	reclaim Reclaimer     // set when the actor takes back what it leaves
	// ext holds what only some actors use (timers, a batch buffer; see
	// ext.go), so that a process stays in its 416-byte size class: nil
	// until the actor first needs it.
	ext *procExt

	state       procState
	spawnFailed bool // crashed in Started: Spawn returned the error
	// inBatch is set while run holds a user batch: an actor that ends
	// during it is finalized there, but the rest of the batch is still in
	// hand, so run answers those requests (not executed) and only then
	// marks the mailbox done (finishBatch). A requester that sees done
	// first would read "took it and died": may have executed.
	inBatch    bool
	reason     error // why it stops; nil for a normal stop
	name       string
	children   map[uint64]*process
	watchers   map[PID]struct{}
	watchPeak  int // the most watchers since the map was last made (shrinkWatchers)
	watching   map[PID]struct{}
	unanswered unanswered // requests taken and not yet answered
}

// terminatedMsg travels in the user lane so it keeps its order behind the
// messages the dead actor sent before it died.
type terminatedMsg struct {
	pid    PID
	reason error
	child  bool
}

// sysChildTerminated is a child's last word to its parent (system lane).
type sysChildTerminated struct {
	child *process
}

// spawn creates a process, runs Started on the calling goroutine and
// schedules a run if messages arrived meanwhile.
func (s *System) spawn(parent *process, props *Props, name string) (PID, error) {
	if err := props.validate(); err != nil {
		return PID{}, err
	}
	if s.stopping.Load() {
		return PID{}, NewError("spawn", s.name, s.inc, name, ErrStopped)
	}
	if parent != nil && parent.state >= stateFinalizing {
		return PID{}, NewError("spawn", s.name, s.inc, name, ErrNoProcess)
	}
	p := &process{sys: s, parent: parent, name: name}
	p.pid = PID{Node: s.name, Incarnation: s.inc, ID: s.nextID.Add(1)}
	p.mb.bound, p.mb.policy = props.MailboxBound, props.MailboxPolicy
	p.mb.scheduled = true // held by this goroutine until Started is done
	p.throughput = props.Throughput
	if p.throughput == 0 {
		p.throughput = s.cfg.Throughput
	}
	p.ctx.proc = p
	if name != "" && !s.names.claim(name, p) {
		return PID{}, &Error{Op: "spawn", Node: s.name, Incarnation: s.inc, Target: fmt.Sprintf("name %q", name), Err: ErrNameTaken, Outcome: NotExecuted}
	}
	a, err := produce(props.Producer)
	if err != nil {
		if name != "" {
			s.names.release(name, p)
		}
		return PID{}, NewError("spawn", s.name, s.inc, name, err)
	}
	p.actor = wrapReceive(a, s.cfg.ReceiveMiddleware, props.ReceiveMiddleware)
	if len(props.SendMiddleware) > 0 {
		next := s.sendMW
		if next == nil {
			next = s.sendDirect
		}
		p.extra().send = chainSend(next, props.SendMiddleware)
	}
	if br, ok := a.(BatchReceiver); ok && br.BatchLimit() > 0 {
		p.batch = br
	}
	if rc, ok := a.(Reclaimer); ok {
		p.reclaim = rc
	}
	s.procs.put(p)
	s.counters.spawns.Add(1)
	if parent == nil {
		s.addTop(p)
		// Stop sets stopping before it snapshots the table: either it saw
		// p, or p sees stopping here. A second stop is harmless.
		if s.stopping.Load() {
			p.pushSys(sysStop{})
		}
	} else {
		if parent.children == nil {
			parent.children = make(map[uint64]*process)
		}
		parent.children[p.pid.ID] = p
	}
	p.spawnFailed = true // until Started has succeeded: no Terminated, no warning
	if props.StashLimit > 0 {
		p.extra().stashLimit = props.StashLimit
	}
	if props.ReceiveTimeout > 0 {
		p.setReceiveTimeout(props.ReceiveTimeout)
	}
	if props.restart != nil {
		p.invoke(&envelope{msg: *props.restart})
	}
	if p.state == stateAlive {
		p.invoke(&envelope{msg: Started{}})
	}
	// A crash, Exit or Stop during Started is settled here, so that Spawn
	// reports it and nothing of the actor remains when it returns.
	p.settleInline()
	if p.state != stateAlive {
		reason := p.reason
		if reason == nil {
			reason = NewError("spawn", s.name, s.inc, name, fmt.Errorf("%w: the actor stopped itself in Started", ErrNoProcess))
		}
		p.yield()
		return PID{}, reason
	}
	p.spawnFailed = false
	p.yield()
	return p.pid, nil
}

// settleInline handles the system messages Started produced (its own
// Exit or Stop) and, if the actor is stopping, waits for its children and
// finalizes it, all on the spawning goroutine.
func (p *process) settleInline() {
	for {
		for _, e := range p.mb.takeSys() {
			p.handleSys(&e)
		}
		if p.state != stateStopping {
			return
		}
		for _, c := range p.children {
			<-c.mb.doneChan()
		}
		p.mb.sysHint.Store(true) // the children's last words are queued
	}
}

func produce(f Producer) (a Actor, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Op: "producer", Value: v, Stack: debug.Stack()}
		}
	}()
	a = f()
	if a == nil {
		return nil, fmt.Errorf("mailroom: producer returned a nil Actor")
	}
	return a, nil
}

// yield ends an inline turn and starts a run if work is waiting.
func (p *process) yield() {
	if p.state != stateDead && p.mb.finishInline() {
		p.sys.runners.start(p)
	}
}

// run processes the mailbox until it is empty, the actor dies, or the
// mailbox has nothing left to give.
func (p *process) run() {
	turn := 0
	for {
		if p.batch != nil {
			// Let the senders that are runnable enqueue first: the batch
			// is whatever they added (see BatchReceiver).
			runtime.Gosched()
		}
		batch, sys, ok := p.mb.take()
		if !ok {
			return
		}
		if sys {
			for i := range batch {
				p.handleSys(&batch[i])
			}
			p.mb.recycle(batch, true)
			if p.state == stateDead {
				return
			}
			continue
		}
		p.inBatch = true
		if p.batch != nil {
			p.runBatches(batch)
			p.runUnstashed()
			p.mb.recycle(batch, false)
			if p.finishBatch() {
				return
			}
			continue
		}
		i := 0
		for ; i < len(batch); i++ {
			p.invoke(&batch[i])
			p.mb.done(1)
			if p.ext != nil && p.ext.unstashed != nil {
				p.runUnstashed() // ahead of the rest of the batch
			}
			if p.state == stateAlive && p.mb.sysHint.Load() {
				p.runSys()
			}
			if p.state != stateAlive {
				break
			}
			if turn++; turn >= p.throughput {
				turn = 0
				runtime.Gosched()
			}
		}
		if i < len(batch) {
			rest := batch[i+1:]
			switch p.state {
			case stateStopping:
				p.mb.holdUser(rest) // dropped as dead letters at finalize
			case stateDead:
				p.dropAll(rest)
			}
		}
		p.mb.recycle(batch, false)
		if p.finishBatch() {
			return
		}
	}
}

// finishBatch ends the user batch run held, its rest already answered or
// put back, and reports whether the actor ended during it: then its
// mailbox is marked done now (see inBatch) and the run must end.
func (p *process) finishBatch() (dead bool) {
	p.inBatch = false
	if p.state != stateDead {
		return false
	}
	p.mb.markDone()
	return true
}

// runBatches delivers a taken user batch to a BatchReceiver in chunks of
// at most BatchLimit plain messages; requests and internal messages go
// one by one through invoke, in order.
func (p *process) runBatches(batch []envelope) {
	limit := p.batch.BatchLimit()
	i := 0
	for i < len(batch) && p.state == stateAlive {
		e := &batch[i]
		if !plainMessage(e) {
			p.invoke(e)
			p.mb.done(1)
			i++
		} else {
			x := p.extra()
			j := i
			for j < len(batch) && j-i < limit && plainMessage(&batch[j]) {
				x.chunk = append(x.chunk, batch[j].msg)
				j++
			}
			p.invokeBatch(x.chunk)
			clear(x.chunk)
			x.chunk = x.chunk[:0]
			p.mb.done(j - i)
			i = j
		}
		if p.state == stateAlive && p.mb.sysHint.Load() {
			p.runSys()
		}
	}
	if i < len(batch) {
		switch p.state {
		case stateStopping:
			p.mb.holdUser(batch[i:])
		case stateDead:
			p.dropAll(batch[i:])
		}
	}
	if x := p.ext; x != nil && cap(x.chunk) > 4096 {
		x.chunk = nil
	}
}

func plainMessage(e *envelope) bool {
	if e.reply != nil {
		return false
	}
	switch e.msg.(type) {
	case *terminatedMsg, PoisonPill, *PoisonPill, *traced, *timer, *continuation:
		return false
	}
	return true
}

func (p *process) invokeBatch(msgs []any) {
	defer func() {
		if v := recover(); v != nil {
			p.ctx.env = nil
			p.crash(v, &envelope{msg: msgs})
		}
	}()
	p.batch.ReceiveBatch(&p.ctx, msgs)
	if x := p.ext; x != nil {
		x.handled(&p.sys.timers, nil)
	}
}

// runSys handles system messages that arrived during a user batch.
func (p *process) runSys() {
	batch := p.mb.takeSys()
	for i := range batch {
		p.handleSys(&batch[i])
	}
	p.mb.recycle(batch, true)
}

// invoke delivers one user-lane envelope to the actor, turning a panic
// into a crash.
func (p *process) invoke(env *envelope) {
	if t, ok := env.msg.(*traced); ok {
		env.msg, p.ctx.tr = t.msg, t
		defer func() { p.ctx.tr = nil }()
	}
	switch m := env.msg.(type) {
	case *terminatedMsg:
		if !m.child {
			if _, ok := p.watching[m.pid]; !ok {
				return // unwatched meanwhile: flushed
			}
			delete(p.watching, m.pid)
		}
		env.msg, env.sender = Terminated{PID: m.pid, Reason: m.reason}, m.pid
	case PoisonPill, *PoisonPill:
		p.beginStop(nil, false)
		return
	case *continuation:
		p.runContinuation(m)
		return
	case *timer:
		msg, ok := p.timerMessage(m)
		if !ok {
			return // stopped meanwhile, or a receive timeout not due yet
		}
		env.msg = msg
	}
	defer func() {
		if v := recover(); v != nil {
			p.ctx.env = nil
			p.crash(v, env)
		}
	}()
	p.ctx.env = env
	if m, ok := p.actor.(*mwActor); ok {
		m.Receive(&p.ctx)
	} else {
		p.behave(p.actor)
	}
	p.ctx.env = nil
	if x := p.ext; x != nil {
		x.stashedCur = false
		x.handled(&p.sys.timers, env.msg)
	}
	if env.reply != nil {
		// Taken, not answered, not deferred: if the actor dies first the
		// requester learns it (may have executed) instead of waiting.
		p.unanswered.add(env.reply, p.sys, p.pid)
	}
}

func (p *process) crash(v any, env *envelope) {
	p.sys.counters.crashes.Add(1)
	pe := &PanicError{Op: "actor", Node: p.sys.name, Target: p.String(), Value: v, Stack: debug.Stack()}
	p.sys.log.Error("actor crashed", "pid", p.pid.String(), "name", p.name,
		"message", fmt.Sprintf("%T", env.msg), "panic", fmt.Sprint(v), "stack", string(pe.Stack))
	if env.reply != nil {
		env.reply.Reply(nil, pe)
		env.reply = nil
	}
	switch p.state {
	case stateAlive:
		p.beginStop(pe, true)
	case stateStopping, stateFinalizing:
		if p.reason == nil {
			p.reason = pe
		}
	}
}

func (p *process) String() string {
	if p.name != "" {
		return p.pid.String() + " (" + p.name + ")"
	}
	return p.pid.String()
}

// shrinkWatchers gives back what the watchers map holds once most of its
// watchers are gone: a Go map keeps its memory when its entries are
// deleted, and a remote peer can make an actor's map grow to its
// MaxWatchesPerPeer, then go (its watches are removed one by one).
func (p *process) shrinkWatchers() {
	switch n := len(p.watchers); {
	case n == 0:
		p.watchers, p.watchPeak = nil, 0
	case p.watchPeak > 64 && n < p.watchPeak/4:
		small := make(map[PID]struct{}, n)
		for w := range p.watchers {
			small[w] = struct{}{}
		}
		p.watchers, p.watchPeak = small, n
	}
}

func (p *process) handleSys(env *envelope) {
	switch m := env.msg.(type) {
	case sysStop:
		if p.state == stateAlive {
			p.beginStop(m.reason, false)
		}
	case sysWatch:
		if p.state == stateDead {
			p.sys.notifyTerminated(m.watcher, p.pid, p.reason)
			return
		}
		if p.parent != nil && m.watcher == p.parent.pid {
			return // the parent watches implicitly
		}
		if p.watchers == nil {
			p.watchers = make(map[PID]struct{})
		}
		p.watchers[m.watcher] = struct{}{}
		p.watchPeak = max(p.watchPeak, len(p.watchers))
	case sysUnwatch:
		delete(p.watchers, m.watcher)
		p.shrinkWatchers()
	case sysChildTerminated:
		delete(p.children, m.child.pid.ID)
		switch p.state {
		case stateAlive:
			if !m.child.spawnFailed {
				p.pushTerminated(&terminatedMsg{pid: m.child.pid, reason: m.child.reason, child: true})
			}
		case stateStopping:
			if len(p.children) == 0 {
				p.finalize()
			}
		}
	}
}

// pushTerminated queues a Terminated notification behind everything
// already in the user lane. Called from the process's own goroutine.
func (p *process) pushTerminated(t *terminatedMsg) {
	// We are running, so scheduled is held: no run needs starting.
	_, _ = p.mb.push(context.Background(), envelope{msg: t}, true)
}

// beginStop starts the stop protocol: Stopping (unless the actor crashed),
// then the children, then finalize once they are all gone.
func (p *process) beginStop(reason error, crashed bool) {
	if p.state != stateAlive {
		return
	}
	p.state, p.reason = stateStopping, reason
	if !crashed {
		p.invoke(&envelope{msg: Stopping{}})
	}
	p.mb.holdUser(nil)
	if len(p.children) == 0 {
		p.finalize()
		return
	}
	for _, c := range p.children {
		c.pushSys(sysStop{})
	}
}

// finalize ends the process: Stopped, unregister, drain the mailbox into
// dead letters, tell watchers and the parent, close the done channel.
func (p *process) finalize() {
	p.state = stateFinalizing // Stopped may still crash; crash records it
	p.invoke(&envelope{msg: Stopped{}})
	p.state = stateDead
	s := p.sys
	if p.ext != nil {
		s.timers.cancelOwned(p.ext)
	}
	if p.name != "" {
		s.names.release(p.name, p)
	}
	s.procs.remove(p.pid.ID)
	sysq, userq := p.mb.close()
	for i := range sysq {
		p.handleSys(&sysq[i])
	}
	p.dropStash()
	p.dropAll(userq)
	p.unanswered.failAll(NewError("request", s.name, s.inc, p.pid.String(), diedBecause(p.reason)), p.pid)
	for w := range p.watchers {
		s.notifyTerminated(w, p.pid, p.reason)
	}
	for t := range p.watching {
		s.unwatch(p.pid, t)
	}
	p.actor, p.watchers, p.watching, p.ctx.env = nil, nil, nil, nil
	if p.parent != nil {
		p.parent.pushSys(sysChildTerminated{child: p})
	} else {
		s.removeTop(p)
	}
	// Last: a waiter that sees done finds its answer given and the parent
	// told; run does it once the rest of a batch in hand is answered.
	if !p.inBatch {
		p.mb.markDone()
	}
}

// diedBecause is ErrNoProcess with the actor's reason attached, so a
// requester can tell a crash (errors.As *PanicError) from a stop.
func diedBecause(reason error) error {
	if reason == nil {
		return ErrNoProcess
	}
	return &endedError{reason: reason}
}

type endedError struct{ reason error }

func (e *endedError) Error() string   { return "no such process: it ended: " + e.reason.Error() }
func (e *endedError) Unwrap() []error { return []error{ErrNoProcess, e.reason} }

// dropAll turns envelopes that will never be processed into dead letters;
// a waiting requester learns ErrNoProcess (not executed).
func (p *process) dropAll(envs []envelope) {
	for i := range envs {
		e := &envs[i]
		switch e.msg.(type) {
		case *terminatedMsg, *timer:
			continue // internal, or a timer the actor's end stopped
		case *continuation:
			p.sys.counters.droppedConts.Add(1)
			continue
		}
		if t, ok := e.msg.(*traced); ok {
			e.msg = t.msg
		}
		if p.reclaim != nil && e.reply == nil && p.reclaimSafe(e.msg) {
			continue
		}
		if e.reply != nil {
			e.reply.Reply(nil, NewError("request", p.sys.name, p.sys.inc, p.pid.String(), ErrNoProcess))
		}
		p.sys.deadLetter(p.pid, e.sender, e.msg, ErrNoProcess)
	}
}

// reclaimSafe offers msg to the actor's Reclaim, treating a panic there as
// not handled (logged).
func (p *process) reclaimSafe(msg any) (handled bool) {
	defer func() {
		if v := recover(); v != nil {
			p.sys.log.Error("Reclaim panicked", "pid", p.pid.String(), "panic", fmt.Sprint(v))
			handled = false
		}
	}()
	return p.reclaim.Reclaim(msg)
}

// pushSys queues a system message; false when the process is dead.
func (p *process) pushSys(m any) bool {
	sched, ok := p.mb.pushSys(envelope{msg: m})
	if sched {
		p.sys.runners.start(p)
	}
	return ok
}

// deliver queues a user message, starting a run when the mailbox was idle.
func (p *process) deliver(ctx context.Context, env envelope) error {
	sched, err := p.mb.push(ctx, env, false)
	if sched {
		p.sys.runners.start(p)
	}
	return err
}
