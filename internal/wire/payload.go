package wire

import (
	"errors"
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/proto"
)

// PayloadOf checks that msg can cross nodes and returns its full type
// name; the message is encoded later, straight into the frame that
// carries it (appendPayload). nil is no payload.
func PayloadOf(msg any) (typ string, pm proto.Message, err error) {
	if msg == nil {
		return "", nil, nil
	}
	pm, ok := msg.(proto.Message)
	if !ok {
		return "", nil, fmt.Errorf("%w: %T is not a proto.Message; only protobuf messages cross nodes", actor.ErrBadMessage, msg)
	}
	return string(pm.ProtoReflect().Descriptor().FullName()), pm, nil
}

// appendPayload appends el's payload as the wire has it: the type name,
// then the message bytes, length first. A message (el.msg) is encoded in
// place, with no buffer of its own; otherwise el.Payload is copied. An
// encoding error wraps actor.ErrBadMessage; dst is then returned as it
// was given.
func appendPayload(dst []byte, el *Element) ([]byte, error) {
	if el.Msg == nil {
		dst = AppendString(dst, el.Type)
		return appendBytes(dst, el.Payload), nil
	}
	if vm, ok := el.Msg.(vtMarshaler); ok {
		mark := len(dst)
		dst = AppendString(dst, el.Type)
		out, err := appendVT(dst, vm, el.Type)
		if err != nil {
			return dst[:mark], err
		}
		return out, nil
	}
	mark := len(dst)
	dst = AppendString(dst, el.Type)
	size := proto.Size(el.Msg)
	dst = AppendUvarint(dst, uint64(size))
	start := len(dst)
	out, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(dst, el.Msg)
	switch {
	case err != nil:
		return dst[:mark], fmt.Errorf("%w: marshal %s: %v", actor.ErrBadMessage, el.Type, err)
	case len(out)-start != size:
		return dst[:mark], fmt.Errorf("%w: marshal %s: its size changed while it was encoded (was it modified concurrently?)", actor.ErrBadMessage, el.Type)
	}
	return out, nil
}

// unmarshal decodes a payload with a type registry, no cache (tests and
// fuzzers; a node decodes with its codecs, codec.go).
func unmarshal(types actor.TypeRegistry, typ string, b []byte) (proto.Message, error) {
	return new(Codecs).Unmarshal(types, typ, b)
}

// ErrorReply fills a reply element's status from a handler's error.
func ErrorReply(el *Element, err error) {
	var re *actor.RemoteError
	var pe *actor.PanicError
	var ae *actor.Error
	switch {
	case errors.As(err, &re):
		el.Status, el.Code, el.Message = StatusRejected, re.Code, re.Message
	case errors.As(err, &pe):
		el.Status, el.Message = StatusPanic, fmt.Sprint(pe.Value)
	case errors.As(err, &ae):
		el.Status, el.Code, el.Message = StatusError, actor.ErrorCode(ae.Err), ae.Err.Error()
		if ae.Outcome == actor.MayHaveExecuted {
			el.Code += MayHaveSuffix
		}
	default:
		el.Status, el.Code, el.Message = StatusRejected, actor.ErrorCode(err), err.Error()
	}
}

// MayHaveSuffix marks a runtime error whose work may have run (e.g. the
// target took the request and died): "no_process~may".
const MayHaveSuffix = "~may"

// ReplyError rebuilds the caller-side error of a failed reply.
func ReplyError(el *Element, op, node string, inc uint64, target string) error {
	switch el.Status {
	case StatusRejected:
		return &actor.RemoteError{Op: op, Node: node, Incarnation: inc, Target: target, Code: el.Code, Message: el.Message, Err: actor.SentinelForCode(el.Code)}
	case StatusPanic:
		return &actor.PanicError{Op: op, Node: node, Target: target, Value: el.Message}
	}
	code, outcome := el.Code, actor.NotExecuted
	if n := len(code) - len(MayHaveSuffix); n >= 0 && code[n:] == MayHaveSuffix {
		code, outcome = code[:n], actor.MayHaveExecuted
	}
	var reason error
	if s := actor.SentinelForCode(code); s != nil {
		reason = &wireReason{sentinel: s, text: el.Message}
	} else {
		reason = errors.New(el.Message)
		outcome = actor.MayHaveExecuted
	}
	return &actor.Error{Op: op, Node: node, Incarnation: inc, Target: target, Err: reason, Outcome: outcome}
}

// wireReason is a runtime error from the other side: the sentinel for
// errors.Is and the callee's own text, which says more.
type wireReason struct {
	sentinel error
	text     string
}

func (w *wireReason) Error() string {
	if w.text == "" {
		return w.sentinel.Error()
	}
	return w.text
}

func (w *wireReason) Unwrap() error { return w.sentinel }
