package actor

import (
	"context"

	"google.golang.org/protobuf/proto"
)

// Transport carries operations whose target is on another node. The
// remote package implements it and attaches itself with SetTransport; a
// System without one answers ErrUnreachable for every other node.
//
// Methods are called concurrently from any goroutine. Send and Cast must
// not block on the network; Request and Call block until answered, ctx
// ends, or liveness fails them.
type Transport interface {
	Send(sender, to PID, msg any) error
	SendNamed(sender PID, node, name string, msg any) error
	Request(ctx context.Context, sender, to PID, msg any) (any, error)
	RequestNamed(ctx context.Context, sender PID, node, name string, msg any) (any, error)
	Cast(node, fn string, arg proto.Message) error
	Call(ctx context.Context, node, fn string, arg proto.Message) (proto.Message, error)
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
