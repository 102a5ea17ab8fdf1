package remote

import (
	"context"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"google.golang.org/protobuf/proto"
)

// transport is the Node as its System's transport (actorhooks.Transport):
// the System hands it every operation whose target is on another node.
// A type of its own, so that these methods, which take the sender a
// System knows and a user never passes, stay off Node's API. Start
// attaches it; the shutdown detaches it.
type transport Node

var _ actorhooks.Transport = (*transport)(nil)

func (t *transport) Send(ctx context.Context, sender, to actor.PID, msg any) error {
	return (*Node)(t).sendTo(ctx, sender, to, msg)
}

func (t *transport) SendNamed(ctx context.Context, sender actor.PID, node, name string, msg any) error {
	return (*Node)(t).sendNamed(ctx, sender, node, name, msg)
}

func (t *transport) Request(ctx context.Context, sender, to actor.PID, msg any) (any, error) {
	return (*Node)(t).request(ctx, sender, to, msg)
}

func (t *transport) RequestNamed(ctx context.Context, sender actor.PID, node, name string, msg any) (any, error) {
	return (*Node)(t).requestNamed(ctx, sender, node, name, msg)
}

func (t *transport) Cast(ctx context.Context, sender actor.PID, node, fn string, arg proto.Message) error {
	return (*Node)(t).cast(ctx, sender, node, fn, arg)
}

func (t *transport) Call(ctx context.Context, sender actor.PID, node, fn string, arg proto.Message) (proto.Message, error) {
	return (*Node)(t).callFn(ctx, sender, node, fn, arg)
}

func (t *transport) Watch(watcher, target actor.PID) { (*Node)(t).watch(watcher, target) }

func (t *transport) Unwatch(watcher, target actor.PID) { (*Node)(t).unwatch(watcher, target) }

func (t *transport) NotifyTerminated(watcher, pid actor.PID, reason error) {
	(*Node)(t).notifyTerminated(watcher, pid, reason)
}
