package idempotency

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// encodeReply is a handler's reply as a record keeps it: an Any (its
// type and bytes), so a repeat gets a message of the same type; nil is
// no bytes.
func encodeReply(m proto.Message) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	a, err := anypb.New(m)
	if err != nil {
		return nil, fmt.Errorf("idempotency: record the reply: %w", err)
	}
	return proto.Marshal(a)
}

// decodeReply is the message encodeReply kept (nil for no bytes). Its
// type must be linked into this program (generated code registers it).
func decodeReply(b []byte) (proto.Message, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var a anypb.Any
	if err := proto.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("idempotency: recorded reply: %w", err)
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("idempotency: recorded reply of type %s: %w", a.GetTypeUrl(), err)
	}
	return m, nil
}
