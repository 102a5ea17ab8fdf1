package actor

import (
	"context"

	"google.golang.org/protobuf/proto"
)

// Sender is a handle for code outside any actor: it has an identity of
// its own (a PID that names no actor), so its messages to one target keep
// their order, and a proxy pool shards it like an actor. Make one per
// goroutine that needs ordering; the System's own methods use the root
// handle (the zero PID), which is one sender too for its sends and casts
// (its blocking calls and requests keep no order between them and spread
// over a pool's proxies). A Sender is cheap and
// safe for concurrent use, but ordering holds only within one goroutine.
//
// The target sees the handle's PID as Context.Sender; it cannot receive
// messages (a Send to it is a dead letter): answer with Respond.
type Sender struct {
	sys *System
	pid PID
}

// NewSender returns a new handle with its own identity.
func (s *System) NewSender() *Sender {
	return &Sender{sys: s, pid: PID{Node: s.name, Incarnation: s.inc, ID: s.nextID.Add(1)}}
}

// PID is the handle's identity.
func (h *Sender) PID() PID { return h.pid }

// Send is System.Send from this handle.
func (h *Sender) Send(to PID, msg any) {
	h.sys.sendVia(h.sys.sendMW, context.Background(), h.pid, to, msg)
}

// SendContext is System.SendContext from this handle.
func (h *Sender) SendContext(ctx context.Context, to PID, msg any) {
	h.sys.sendVia(h.sys.sendMW, ctx, h.pid, to, msg)
}

// SendNamed is System.SendNamed from this handle.
func (h *Sender) SendNamed(node, name string, msg any) {
	h.sys.sendNamedVia(h.sys.sendMW, context.Background(), h.pid, node, name, msg)
}

// Request is System.Request from this handle.
func (h *Sender) Request(ctx context.Context, to PID, msg any) (any, error) {
	return h.sys.requestVia(h.sys.sendMW, ctx, h.pid, to, msg)
}

// RequestNamed is System.RequestNamed from this handle.
func (h *Sender) RequestNamed(ctx context.Context, node, name string, msg any) (any, error) {
	return h.sys.requestNamedVia(h.sys.sendMW, ctx, h.pid, node, name, msg)
}

// Call is System.Call from this handle.
func (h *Sender) Call(ctx context.Context, node, fn string, arg proto.Message) (proto.Message, error) {
	return h.sys.callVia(h.sys.sendMW, ctx, h.pid, node, fn, arg)
}

// Cast is System.Cast from this handle.
func (h *Sender) Cast(node, fn string, arg proto.Message) {
	h.sys.castVia(h.sys.sendMW, context.Background(), h.pid, node, fn, arg)
}

// CastContext is System.CastContext from this handle.
func (h *Sender) CastContext(ctx context.Context, node, fn string, arg proto.Message) {
	h.sys.castVia(h.sys.sendMW, ctx, h.pid, node, fn, arg)
}
