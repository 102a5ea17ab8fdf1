package cluster

import (
	"context"
	"fmt"
	"reflect"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/proto"
)

// Call is the protobuf form of Request, as actor.Caller's Call is beside
// its Request: arg and result are proto.Message, so a call compiles only
// with what can cross nodes, wherever the grain's owner is. The grain
// gets arg as its message and answers with Context.Respond (a
// proto.Message) or Context.RespondError. Activation, the placement
// cache, the one transparent retry of a message that reached no
// activation, and the three outcomes are Request's: a call pinned to an
// activation whose node dies fails at once as may have executed
// (actor.ErrNodeDown).
func (c *Cluster) Call(ctx context.Context, caller actor.Caller, kind, identity string, arg proto.Message) (proto.Message, error) {
	v, err := c.Request(ctx, caller, kind, identity, arg)
	if err != nil || v == nil {
		return nil, err
	}
	if m, ok := v.(proto.Message); ok {
		return m, nil
	}
	return nil, &actor.Error{Op: "call", Target: "grain " + grainKey(kind, identity),
		Err: fmt.Errorf("%w: got %T, want a proto.Message", actor.ErrReplyType, v), Outcome: actor.Executed}
}

// CallAs is c.Call with the result typed, as actor.CallAs: R is the
// message type the grain answers with (e.g. *pb.Balance). A nil result is
// R's zero value; a result of another type is an *actor.Error wrapping
// actor.ErrReplyType, executed (the grain handled the call), naming the
// type received and the type wanted.
func CallAs[R proto.Message](ctx context.Context, c *Cluster, caller actor.Caller, kind, identity string, arg proto.Message) (R, error) {
	var zero R
	v, err := c.Call(ctx, caller, kind, identity, arg)
	if err != nil || v == nil {
		return zero, err
	}
	if r, ok := v.(R); ok {
		return r, nil
	}
	return zero, &actor.Error{Op: "call", Target: "grain " + grainKey(kind, identity),
		Err: fmt.Errorf("%w: got %T, want %s", actor.ErrReplyType, v, reflect.TypeFor[R]()), Outcome: actor.Executed}
}
