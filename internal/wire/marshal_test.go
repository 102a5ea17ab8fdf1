package wire

import (
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/proto"
)

// marshal encodes a payload on its own: its full type name and its
// bytes; nil is no payload. For tests that build frames by hand (the
// runtime encodes in place, appendPayload).
func marshal(msg any) (typ string, b []byte, err error) {
	if msg == nil {
		return "", nil, nil
	}
	pm, ok := msg.(proto.Message)
	if !ok {
		return "", nil, fmt.Errorf("%w: %T is not a proto.Message; only protobuf messages cross nodes", actor.ErrBadMessage, msg)
	}
	b, err = proto.MarshalOptions{}.Marshal(pm)
	if err != nil {
		return "", nil, fmt.Errorf("%w: marshal %s: %v", actor.ErrBadMessage, pm.ProtoReflect().Descriptor().FullName(), err)
	}
	return string(pm.ProtoReflect().Descriptor().FullName()), b, nil
}
