package actor

import (
	"context"
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"
)

// Caller is everything that sends: the System (its root handle), a
// Sender handle, and an actor's Context. Code that only sends, requests
// and calls takes a Caller and works from an actor, from a goroutine with
// its own handle, or from the System alike; the sender the target sees is
// the Caller's identity (the actor, the handle, or zero for the System).
//
// Every target may be local or on another node: the methods are the same.
// Send, SendNamed and Cast return nothing: a message that cannot be
// delivered is a dead letter, counted and offered to SubscribeDeadLetters,
// never silent. Request, RequestNamed and Call block until the answer,
// ctx ends, or liveness fails them; their errors are classified by
// Outcome. RequestAs, RequestNamedAs and CallAs are the same with the
// reply typed.
type Caller interface {
	// Send delivers msg to the actor to, fire and forget. Messages from
	// one Caller to one target arrive in order.
	Send(to PID, msg any)
	// SendNamed delivers msg to the actor registered as name on node
	// ("" is this node).
	SendNamed(node, name string, msg any)
	// Request sends msg to the actor to and waits for the answer it gives
	// with Context.Respond.
	Request(ctx context.Context, to PID, msg any) (any, error)
	// RequestNamed is Request to the actor registered as name on node.
	RequestNamed(ctx context.Context, node, name string, msg any) (any, error)
	// Call runs the function registered as fn on node and waits for its
	// result.
	Call(ctx context.Context, node, fn string, arg proto.Message) (proto.Message, error)
	// Cast runs the function registered as fn on node without waiting.
	Cast(node, fn string, arg proto.Message)
}

var (
	_ Caller = (*System)(nil)
	_ Caller = (*Sender)(nil)
	_ Caller = (*Context)(nil)
)

// RequestAs is c.Request with the answer typed: T is what the target
// responds with (a proto.Message type for a remote target, any type for a
// local one). A nil answer is T's zero value. An answer of another type is
// an *Error wrapping ErrReplyType that names the type received and the
// type wanted; its outcome is Executed, since the target handled the
// request (do not retry it blindly).
func RequestAs[T any](ctx context.Context, c Caller, to PID, msg any) (T, error) {
	v, err := c.Request(ctx, to, msg)
	if err != nil {
		var zero T
		return zero, err
	}
	return replyAs[T](v, "request", to.Node, to.Incarnation, to.String())
}

// RequestNamedAs is RequestAs to the actor registered as name on node.
func RequestNamedAs[T any](ctx context.Context, c Caller, node, name string, msg any) (T, error) {
	v, err := c.RequestNamed(ctx, node, name, msg)
	if err != nil {
		var zero T
		return zero, err
	}
	return replyAs[T](v, "request", node, 0, fmt.Sprintf("name %q", name))
}

// CallAs is c.Call with the result typed: R is the message type the
// function returns (e.g. *pb.Receipt). A nil result is R's zero value;
// a result of another type is an *Error wrapping ErrReplyType, executed
// (the function ran), naming the type received and the type wanted.
func CallAs[R proto.Message](ctx context.Context, c Caller, node, fn string, arg proto.Message) (R, error) {
	v, err := c.Call(ctx, node, fn, arg)
	if err != nil {
		var zero R
		return zero, err
	}
	if v == nil {
		var zero R
		return zero, nil
	}
	return replyAs[R](v, "call", node, 0, fn)
}

// replyAs converts the answer v of a successful operation to T.
func replyAs[T any](v any, op, node string, inc uint64, target string) (T, error) {
	if r, ok := v.(T); ok || v == nil {
		return r, nil
	}
	var zero T
	return zero, &Error{Op: op, Node: node, Incarnation: inc, Target: target,
		Err: fmt.Errorf("%w: got %T, want %s", ErrReplyType, v, reflect.TypeFor[T]()), Outcome: Executed}
}
