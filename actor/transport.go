package actor

import (
	"context"

	"github.com/mailroom-go/mailroom/internal/hooks"
	"google.golang.org/protobuf/proto"
)

// Transport carries operations whose target is on another node. The
// remote package implements it and attaches itself with SetTransport; a
// System without one answers ErrUnreachable for every other node.
//
// Methods are called concurrently from any goroutine. sender identifies
// the caller (an actor, a Sender handle, or zero for the system's root
// handle): one sender's messages to one target keep their order. Send and
// Cast may wait while a link is dialed or full; Request and Call block
// until answered, ctx ends, or liveness fails them.
type Transport interface {
	Send(sender, to PID, msg any) error
	SendNamed(sender PID, node, name string, msg any) error
	Request(ctx context.Context, sender, to PID, msg any) (any, error)
	RequestNamed(ctx context.Context, sender PID, node, name string, msg any) (any, error)
	Cast(sender PID, node, fn string, arg proto.Message) error
	Call(ctx context.Context, sender PID, node, fn string, arg proto.Message) (proto.Message, error)
	// Watch asks for Terminated at the local watcher when the remote
	// target ends or its node incarnation leaves.
	Watch(watcher, target PID)
	Unwatch(watcher, target PID)
	// NotifyTerminated tells a remote watcher a local actor ended.
	NotifyTerminated(watcher, pid PID, reason error)
}

type remoteBox struct{ t Transport }

// SetTransport attaches the transport for other nodes (nil detaches).
func (s *System) SetTransport(t Transport) {
	if t == nil {
		s.remote.Store(nil)
		return
	}
	s.remote.Store(&remoteBox{t: t})
}

func (s *System) transport() Transport {
	if b := s.remote.Load(); b != nil {
		return b.t
	}
	return nil
}

// DeliverLocal hands a message from another node to the local actor to.
// r, when not nil, receives the answer. A stale incarnation or a dead
// actor is ErrNoProcess; the caller answers the sender. For transports.
func (s *System) DeliverLocal(ctx context.Context, sender, to PID, msg any, r Replier) error {
	p := s.local(to)
	if p == nil || to.Node != s.name {
		return ErrNoProcess
	}
	return p.deliver(ctx, envelope{msg: msg, sender: sender, reply: r})
}

// DeliverNamed hands a message from another node to the local actor
// registered as name. For transports.
func (s *System) DeliverNamed(ctx context.Context, sender PID, name string, msg any, r Replier) error {
	p := s.names.get(name)
	if p == nil {
		return ErrNoProcess
	}
	return p.deliver(ctx, envelope{msg: msg, sender: sender, reply: r})
}

func init() { hooks.DeliverRun = (*System).deliverRun }

// deliverRun is hooks.DeliverRun: a transport hands a run of messages
// for one local actor with one lookup and one mailbox lock.
func (s *System) deliverRun(ctx context.Context, to PID, name string, msgs []any, senders []PID) (int, error) {
	var p *process
	if name != "" {
		p = s.names.get(name)
	} else if to.Node == s.name {
		p = s.local(to)
	}
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
			go p.run()
		}
	}
	return n, err
}

// Inject queues msg for the local actor to, ignoring its mailbox bound:
// for transports' own traffic that must not wait (replies through a
// proxy), whose volume is bounded elsewhere. ErrNoProcess if it is gone.
func (s *System) Inject(to PID, msg any) error {
	p := s.local(to)
	if p == nil || to.Node != s.name {
		return ErrNoProcess
	}
	sched, err := p.mb.push(nil, envelope{msg: msg}, true)
	if sched {
		go p.run()
	}
	return err
}

// MailboxLen is the number of user messages waiting (not yet processed)
// in the local actor pid's mailbox, or -1 if it is gone.
func (s *System) MailboxLen(pid PID) int {
	p := s.local(pid)
	if p == nil {
		return -1
	}
	p.mb.mu.Lock()
	defer p.mb.mu.Unlock()
	return len(p.mb.user)
}
