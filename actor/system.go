package actor

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
)

// System is one node: a name, an incarnation drawn at start, its actors,
// its registered functions and, once a transport is attached, its links.
type System struct {
	cfg  Config
	name string
	inc  uint64
	log  *slog.Logger

	// sendMW is Config.SendMiddleware's chain, nil when it has none.
	sendMW SendFunc

	nextID atomic.Uint64
	procs  procTable
	names  nameTable

	topCount atomic.Int64  // live top-level actors
	topGone  chan struct{} // closed when topCount is 0 after stop began
	topOnce  sync.Once

	fns       atomic.Pointer[map[string]Handler]
	fnMu      sync.Mutex // serialises writers of fns
	workMu    sync.Mutex // orders stopping against work.Add
	work      sync.WaitGroup
	dead      deadLetters
	late      atomic.Uint64
	castFails atomic.Uint64
	counters  counters // spawns, crashes, dead letters by reason (counters.go)

	remote atomic.Pointer[remoteBox]

	sampler  sampler  // mailbox samples for the read side (sample.go)
	failures failures // failed calls and requests by outcome (outcomes.go)
	values   sync.Map // what mailroom's layers keep per System (actorhooks.Value)
	timers   scheduler
	runners  runners // the goroutines actors' runs take (runners.go)

	hookMu sync.Mutex // protects hooks
	hooks  []StopHook

	stopping atomic.Bool
	stopOnce sync.Once
	stopErr  error
	stopped  chan struct{}
}

// StopHook runs during System.Stop, before any actor is stopped, bounded
// by Stop's ctx. Hooks run one at a time in the reverse order of
// registration: the last layer attached, on top of the others, stops
// first. Stop returns a hook's error, joined with any others.
type StopHook func(ctx context.Context) error

// Start creates a node with a fresh random incarnation.
func Start(cfg Config) (*System, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &System{
		cfg:     cfg,
		name:    cfg.Name,
		inc:     newIncarnation(),
		topGone: make(chan struct{}),
		stopped: make(chan struct{}),
	}
	s.log = cfg.Logger.With("node", s.name)
	s.timers.init(s)
	s.runners.init(s.stopped)
	if len(cfg.SendMiddleware) > 0 {
		s.sendMW = chainSend(s.sendDirect, cfg.SendMiddleware)
	}
	empty := map[string]Handler{}
	s.fns.Store(&empty)
	return s, nil
}

func newIncarnation() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("mailroom: no randomness for an incarnation: %v", err))
		}
		if v := binary.LittleEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}

// Name is the node name.
func (s *System) Name() string { return s.name }

// Incarnation is the random non-zero value drawn when this node started.
func (s *System) Incarnation() uint64 { return s.inc }

// Logger is the system's logger, with the node name attached.
func (s *System) Logger() *slog.Logger { return s.log }

// Config returns the configuration in effect, defaults filled in.
func (s *System) Config() Config { return s.cfg }

// Done is closed when Stop has finished.
func (s *System) Done() <-chan struct{} { return s.stopped }

// Stopping reports whether Stop has begun.
func (s *System) Stopping() bool { return s.stopping.Load() }

// Spawn starts a top-level actor. Its Started message is handled before
// Spawn returns; a panic there is returned as a *PanicError and no actor
// remains.
func (s *System) Spawn(props *Props) (PID, error) { return s.spawn(nil, props, "") }

// SpawnNamed starts a top-level actor registered under name. The name is
// released when the actor ends. ErrNameTaken if another actor holds it.
func (s *System) SpawnNamed(props *Props, name string) (PID, error) {
	if name == "" {
		return PID{}, fmt.Errorf("mailroom: spawn: empty name")
	}
	return s.spawn(nil, props, name)
}

// SpawnFunc starts a top-level actor from a plain function.
func (s *System) SpawnFunc(f ReceiveFunc) (PID, error) { return s.spawn(nil, PropsFromFunc(f), "") }

// Lookup returns the PID registered under name on this node.
func (s *System) Lookup(name string) (PID, bool) {
	if p := s.names.get(name); p != nil {
		return p.pid, true
	}
	return PID{}, false
}

// NumActors is the number of live actors.
func (s *System) NumActors() int { return s.procs.count() }

// Send delivers msg to pid, fire and forget. Messages from one sender to
// one target arrive in order. A message that cannot be delivered is a dead
// letter: counted, offered to subscribers, never silent. Remote messages
// must be proto.Message values. With a bounded Block mailbox Send waits
// for room.
//
// The System's own methods are one sender, the root handle: its sends
// (Send, SendNamed, Cast) keep their order, and so travel through one
// proxy of a proxy pool. Goroutines that send in parallel and each need
// their own order should each use a handle of their own (NewSender).
func (s *System) Send(to PID, msg any) { s.sendVia(s.sendMW, context.Background(), PID{}, to, msg) }

// SendContext is Send carrying ctx's trace: when ctx holds an
// OpenTelemetry span, a message to another node carries its trace
// context (see remote.Config.TracerProvider), and the target's
// Context.Context continues the trace. ctx's values only: it bounds
// nothing, and its end does not stop the send.
func (s *System) SendContext(ctx context.Context, to PID, msg any) {
	s.sendVia(s.sendMW, ctx, PID{}, to, msg)
}

// TrySend is Send that reports why a message could not be queued
// (ErrMailboxFull, ErrNoProcess, ErrUnreachable, ...). The message is still
// counted as a dead letter. A nil error means queued, not processed.
func (s *System) TrySend(to PID, msg any) error { return s.trySend(PID{}, to, msg, FailFast) }

// SendNamed delivers msg to the actor registered under name on node.
func (s *System) SendNamed(node, name string, msg any) {
	s.sendNamedVia(s.sendMW, context.Background(), PID{}, node, name, msg)
}

// Request sends msg to pid and waits for the answer the target gives with
// Context.Respond. There is no default timeout: it ends with the answer,
// when ctx ends, or when the target dies (ErrNoProcess) or its node
// incarnation leaves (ErrNodeDown).
//
// Requests (and calls) made through the System's own methods from
// different goroutines need no order between them: toward a node with a
// proxy pool they spread over every proxy. Use a Sender handle (NewSender)
// when a request must follow that handle's earlier sends in order.
func (s *System) Request(ctx context.Context, to PID, msg any) (any, error) {
	return s.requestVia(s.sendMW, ctx, PID{}, to, msg)
}

// RequestNamed is Request to the actor registered under name on node.
func (s *System) RequestNamed(ctx context.Context, node, name string, msg any) (any, error) {
	return s.requestNamedVia(s.sendMW, ctx, PID{}, node, name, msg)
}

// StopActor stops the actor pid: it receives Stopping, its children stop,
// it receives Stopped. Asynchronous; watch it, or use StopActorWait.
func (s *System) StopActor(pid PID) {
	if pid.Node != s.name || pid.Incarnation != s.inc {
		s.log.Warn("stop of a pid that is not local", "pid", pid.String())
		return
	}
	if p := s.procs.get(pid.ID); p != nil {
		p.pushSys(sysStop{})
	}
}

// StopActorWait stops pid and waits until it is gone or ctx ends.
func (s *System) StopActorWait(ctx context.Context, pid PID) error {
	if pid.Node != s.name || pid.Incarnation != s.inc {
		return NewError("stop", pid.Node, pid.Incarnation, pid.String(), ErrNoProcess)
	}
	p := s.procs.get(pid.ID)
	if p == nil {
		return nil
	}
	done := p.mb.doneChan()
	p.pushSys(sysStop{})
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mailroom: stop %s: %w", pid, ctx.Err())
	}
}

// Stop stops the node: the stop hooks of attached layers run first
// (a transport drains, deregisters and closes its links), then every
// top-level actor is stopped (each stops its children before its own
// Stopped), then in-flight function calls are waited for. It returns when
// all of that is done or ctx ends, whichever is first, naming what did not
// finish. Idempotent: later calls wait for the first and return its result.
func (s *System) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.stopErr = s.shutdown(ctx)
		close(s.stopped)
	})
	<-s.stopped
	return s.stopErr
}

func (s *System) shutdown(ctx context.Context) error {
	s.workMu.Lock()
	s.stopping.Store(true)
	s.workMu.Unlock()
	var errs []error
	s.hookMu.Lock()
	hooks := append([]StopHook(nil), s.hooks...)
	s.hookMu.Unlock()
	for i := len(hooks) - 1; i >= 0; i-- {
		if err := hooks[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// Spawn refuses new actors from here on; stop every top-level one.
	for _, p := range s.procs.snapshot(func(p *process) bool { return p.parent == nil }) {
		p.pushSys(sysStop{})
	}
	if s.topCount.Load() == 0 {
		s.closeTopGone()
	}
	if !waitFor(ctx, s.topGone) {
		errs = append(errs, fmt.Errorf("mailroom: stop node %s: %d actors still running: %w", s.name, s.procs.count(), ctx.Err()))
	}
	// The actors' ends stopped their timers; what is left is
	// System.SendAfter's (and, if ctx ran out, the timers of actors still
	// running): none fires from here on.
	s.timers.close()
	workDone := make(chan struct{})
	go func() { s.work.Wait(); close(workDone) }()
	if !waitFor(ctx, workDone) {
		errs = append(errs, fmt.Errorf("mailroom: stop node %s: function calls still running: %w", s.name, ctx.Err()))
	}
	if err := errors.Join(errs...); err != nil {
		s.log.Warn("node stopped with errors", "err", err)
		return err
	}
	return nil
}

// OnStop registers a hook run by Stop before actors stop. The layers
// built on a System stop this way (the remote layer drains and closes its
// links, the proxy pools and services stop), and so can a user's own: an
// HTTP server that must stop taking requests before the actors serving
// them stop, registered after the layers it uses, stops before them.
func (s *System) OnStop(h StopHook) {
	s.hookMu.Lock()
	s.hooks = append(s.hooks, h)
	s.hookMu.Unlock()
}

// waitFor waits for done or ctx; done wins when both are ready.
func waitFor(ctx context.Context, done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
}

func (s *System) closeTopGone() {
	s.topOnce.Do(func() { close(s.topGone) })
}

func (s *System) addTop(p *process) { s.topCount.Add(1) }

func (s *System) removeTop(p *process) {
	if s.topCount.Add(-1) == 0 && s.stopping.Load() {
		s.closeTopGone()
	}
	if p.reason != nil && !p.spawnFailed {
		s.log.Warn("top-level actor ended abnormally", "pid", p.pid.String(), "name", p.name, "reason", p.reason)
	}
}

// local returns the live local process for pid, or nil.
func (s *System) local(pid PID) *process {
	if pid.Incarnation != s.inc {
		return nil
	}
	return s.procs.get(pid.ID)
}

func (s *System) send(ctx context.Context, sender, to PID, msg any) {
	if to.Node != s.name {
		s.sendRemote(ctx, sender, to, msg)
		return
	}
	p := s.local(to)
	if p == nil {
		s.deadLetter(to, sender, msg, ErrNoProcess)
		return
	}
	if err := p.deliver(context.Background(), envelope{msg: withTrace(msg, ctx), sender: sender}); err != nil {
		s.deadLetter(to, sender, msg, err)
	}
}

func (s *System) trySend(sender, to PID, msg any, _ MailboxPolicy) error {
	if to.Node != s.name {
		return s.sendRemote(context.Background(), sender, to, msg)
	}
	p := s.local(to)
	if p == nil {
		s.deadLetter(to, sender, msg, ErrNoProcess)
		return NewError("send", s.name, s.inc, to.String(), ErrNoProcess)
	}
	sched, err := p.mb.push(context.Background(), envelope{msg: msg, sender: sender}, false)
	if sched {
		s.runners.start(p)
	}
	if err != nil {
		s.deadLetter(to, sender, msg, err)
		return NewError("send", s.name, s.inc, to.String(), err)
	}
	return nil
}

func (s *System) sendNamed(ctx context.Context, sender PID, node, name string, msg any) {
	if node == s.name || node == "" {
		p := s.names.get(name)
		if p == nil {
			s.deadLetter(PID{Node: s.name, Incarnation: s.inc}, sender, msg, fmt.Errorf("name %q: %w", name, ErrNoProcess))
			return
		}
		if err := p.deliver(context.Background(), envelope{msg: withTrace(msg, ctx), sender: sender}); err != nil {
			s.deadLetter(p.pid, sender, msg, err)
		}
		return
	}
	r := s.transport()
	if r == nil {
		s.deadLetter(PID{Node: node}, sender, msg, ErrUnreachable)
		return
	}
	if err := r.SendNamed(ctx, sender, node, name, msg); err != nil {
		s.deadLetter(PID{Node: node}, sender, msg, err)
	}
}

func (s *System) sendRemote(ctx context.Context, sender, to PID, msg any) error {
	r := s.transport()
	if r == nil {
		s.deadLetter(to, sender, msg, ErrUnreachable)
		return NewError("send", to.Node, to.Incarnation, to.String(), ErrUnreachable)
	}
	if err := r.Send(ctx, sender, to, msg); err != nil {
		s.deadLetter(to, sender, msg, err)
		return err
	}
	return nil
}
