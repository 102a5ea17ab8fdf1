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
// System knows and a user never passes, stay off Node's API; the
// outbound side (outbound.go) is its: the pool-or-native routing of
// every outgoing element, replies included, and the watches this node
// asks of others. Start attaches it; the shutdown detaches it.
type transport Node

var _ actorhooks.Transport = (*transport)(nil)

func (n *transport) node() *Node { return (*Node)(n) }

func (n *transport) Send(ctx context.Context, sender, to actor.PID, msg any) error {
	return n.sendTo(ctx, sender, to, msg)
}

func (n *transport) SendNamed(ctx context.Context, sender actor.PID, node, name string, msg any) error {
	return n.sendNamed(ctx, sender, node, name, msg)
}

func (n *transport) Request(ctx context.Context, sender, to actor.PID, msg any) (any, error) {
	return n.request(ctx, sender, to, msg)
}

func (n *transport) RequestNamed(ctx context.Context, sender actor.PID, node, name string, msg any) (any, error) {
	return n.requestNamed(ctx, sender, node, name, msg)
}

func (n *transport) Cast(ctx context.Context, sender actor.PID, node, fn string, arg proto.Message) error {
	return n.cast(ctx, sender, node, fn, arg)
}

func (n *transport) Call(ctx context.Context, sender actor.PID, node, fn string, arg proto.Message) (proto.Message, error) {
	return n.callFn(ctx, sender, node, fn, arg)
}

func (n *transport) Watch(watcher, target actor.PID) { n.watch(watcher, target) }

func (n *transport) Unwatch(watcher, target actor.PID) { n.unwatch(watcher, target) }

func (n *transport) NotifyTerminated(watcher, pid actor.PID, reason error) {
	n.notifyTerminated(watcher, pid, reason)
}
