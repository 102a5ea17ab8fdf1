package actor

import (
	"context"
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"
)

// RegisterAs is s.Register with the argument and result typed, the
// handler side of CallAs: A is the message type the function takes (e.g.
// *pb.Job), R the one it returns. A call whose argument is of another
// type never reaches h: the caller gets a not-executed *Error wrapping
// ErrBadMessage that names the type received and the type wanted (an
// untyped handler's arg.(*pb.Job) would panic instead, and a panic reads
// as executed). A nil argument reaches h as A's zero value (a nil
// pointer, whose generated getters are safe).
func RegisterAs[A, R proto.Message](s *System, name string, h func(ctx context.Context, arg A) (R, error)) error {
	if h == nil {
		return s.Register(name, nil)
	}
	return s.Register(name, func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		a, ok := arg.(A)
		if !ok && arg != nil {
			return nil, NotExecutedError(fmt.Errorf("%w: function %q takes %s, got %T", ErrBadMessage, name, reflect.TypeFor[A](), arg))
		}
		r, err := h(ctx, a)
		if err != nil || !r.ProtoReflect().IsValid() {
			return nil, err // (a typed nil result is no result)
		}
		return r, nil
	})
}
