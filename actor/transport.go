package actor

import (
	"context"

	"google.golang.org/protobuf/proto"
)

// transport carries operations whose target is on another node: the
// remote package attaches one through internal/actorhooks (SetTransport),
// which documents the contract. A System without one answers
// ErrUnreachable for every other node. It is an alias of an interface
// literal so that actorhooks.Transport, the same literal, is the same type.
type transport = interface {
	Send(ctx context.Context, sender, to PID, msg any) error
	SendNamed(ctx context.Context, sender PID, node, name string, msg any) error
	Request(ctx context.Context, sender, to PID, msg any) (any, error)
	RequestNamed(ctx context.Context, sender PID, node, name string, msg any) (any, error)
	Cast(ctx context.Context, sender PID, node, fn string, arg proto.Message) error
	Call(ctx context.Context, sender PID, node, fn string, arg proto.Message) (proto.Message, error)
	Watch(watcher, target PID)
	Unwatch(watcher, target PID)
	NotifyTerminated(watcher, pid PID, reason error)
}

type remoteBox struct{ t transport }

// setTransport attaches the transport for other nodes (nil detaches).
func (s *System) setTransport(t transport) {
	if t == nil {
		s.remote.Store(nil)
		return
	}
	s.remote.Store(&remoteBox{t: t})
}

func (s *System) transport() transport {
	if b := s.remote.Load(); b != nil {
		return b.t
	}
	return nil
}

// deliverLocal hands a message from another node to the local actor to
// (actorhooks.DeliverLocal).
func (s *System) deliverLocal(ctx context.Context, sender, to PID, msg any, r Replier) error {
	p := s.local(to)
	if p == nil || to.Node != s.name {
		return ErrNoProcess
	}
	return p.deliver(ctx, envelope{msg: msg, sender: sender, reply: r})
}

// deliverNamed hands a message from another node to the local actor
// registered as name (actorhooks.DeliverNamed).
func (s *System) deliverNamed(ctx context.Context, sender PID, name string, msg any, r Replier) error {
	p := s.names.get(name)
	if p == nil {
		return ErrNoProcess
	}
	return p.deliver(ctx, envelope{msg: msg, sender: sender, reply: r})
}

// target is the local actor registered as name, or, when name is "",
// the local actor to; nil if there is none.
func (s *System) target(to PID, name string) *process {
	if name != "" {
		return s.names.get(name)
	}
	if to.Node == s.name {
		return s.local(to)
	}
	return nil
}

// deliverTraced is actorhooks.DeliverTraced: deliverLocal or
// deliverNamed with the handler's context tc: its trace, and the
// headers it holds (WithHeaders).
func (s *System) deliverTraced(ctx, tc context.Context, sender, to PID, name string, msg any, r Replier) error {
	p := s.target(to, name)
	if p == nil {
		return ErrNoProcess
	}
	t := &traced{msg: msg, ctx: tc, hdr: HeadersFrom(tc)}
	if t.hdr != nil {
		if t.ctx = traceOnly(tc); t.ctx == nil {
			t.ctx = context.Background()
		}
	}
	return p.deliver(ctx, envelope{msg: t, sender: sender, reply: r})
}

// deliverRun is actorhooks.DeliverRun: a transport hands a run of
// messages for one local actor with one lookup and one mailbox lock.
func (s *System) deliverRun(ctx context.Context, to PID, name string, msgs []any, senders []PID) (int, error) {
	p := s.target(to, name)
	if p == nil {
		return 0, ErrNoProcess
	}
	n := 0
	var err error
	for n < len(msgs) && err == nil {
		var k int
		var sched bool
		k, sched, err = p.mb.pushRun(ctx, msgs[n:], senders[n:])
		n += k
		if sched {
			s.runners.start(p)
		}
	}
	return n, err
}

// inject queues msg for the local actor to, ignoring its mailbox bound
// (actorhooks.Inject).
func (s *System) inject(to PID, msg any) error {
	p := s.local(to)
	if p == nil || to.Node != s.name {
		return ErrNoProcess
	}
	sched, err := p.mb.push(context.Background(), envelope{msg: msg}, true)
	if sched {
		s.runners.start(p)
	}
	return err
}

// MailboxLen is the depth of the local actor pid's mailbox: the user
// messages queued for it plus the batch it is working through (an actor
// takes what is queued as one batch, and that batch counts until the
// actor comes back for the next), so a busy actor never looks empty. It
// is -1 when pid is not a live actor of this System. A snapshot, for
// routers (smallest mailbox) and tests: it may change before the caller
// acts on it. One short lock of the mailbox; no allocation.
func (s *System) MailboxLen(pid PID) int {
	p := s.local(pid)
	if p == nil || pid.Node != s.name {
		return -1
	}
	p.mb.mu.Lock()
	defer p.mb.mu.Unlock()
	return len(p.mb.user) + int(p.mb.inHand)
}

// value returns what a layer keeps on s under key, made by mk the first
// time (actorhooks.Value).
func (s *System) value(key any, mk func() any) any {
	if v, ok := s.values.Load(key); ok {
		return v
	}
	v, _ := s.values.LoadOrStore(key, mk())
	return v
}
