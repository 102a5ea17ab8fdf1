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

// ErrorReply fills a reply element's status from the error its caller is
// to get, keeping the outcome it states (actor.Outcome): an executed one
// is a rejection (status 1, its code) or a panic (status 2); one that did
// not run or may have run is status 3 with its code, "~may" marking the
// latter, and the text of its reason. The code and text are cut at
// MaxNameLen and MaxErrorText bytes: an error reply is small whatever the
// error says.
func ErrorReply(el *Element, err error) {
	errorReply(el, err)
	el.Code, el.Message = CutText(el.Code, MaxNameLen), CutText(el.Message, MaxErrorText)
}

func errorReply(el *Element, err error) {
	outcome := actor.Outcome(err)
	if outcome == actor.Executed {
		var re *actor.RemoteError
		var pe *actor.PanicError
		switch {
		case errors.As(err, &re):
			el.Status, el.Code, el.Message = StatusRejected, re.Code, re.Message
		case errors.As(err, &pe):
			el.Status, el.Message = StatusPanic, fmt.Sprint(pe.Value)
		default:
			el.Status, el.Code, el.Message = StatusRejected, actor.ErrorCode(err), reasonText(err)
		}
		return
	}
	el.Status, el.Code, el.Message = StatusError, actor.ErrorCode(err), reasonText(err)
	if outcome == actor.MayHaveExecuted {
		el.Code += MayHaveSuffix
	}
}

// reasonText is what the caller's error will say after its own operation,
// node and target: the reason of an *actor.Error, or err's text.
func reasonText(err error) string {
	var ae *actor.Error
	if errors.As(err, &ae) {
		return ae.Err.Error()
	}
	return err.Error()
}

// MayHaveSuffix marks a runtime error whose work may have run (e.g. the
// target took the request and died): "no_process~may".
const MayHaveSuffix = "~may"

// ReplyError rebuilds the caller-side error of a failed reply from node
// (incarnation inc). Status 3 is not executed unless its code ends in
// "~may", whatever the code: a code that names no sentinel is the
// handler's own (a Reject code under actor.NotExecutedError), kept for
// actor.ErrorCode.
func ReplyError(el *Element, op, node string, inc uint64, target string) error {
	switch el.Status {
	case StatusRejected:
		if el.Code == ctxDeadlineCode || el.Code == ctxCanceledCode {
			// A node of an earlier version rejects with its handler's
			// ended ctx: read as a node of this version sends it.
			return &actor.Error{Op: op, Node: node, Incarnation: inc, Target: target, Err: &wireReason{sentinel: actor.SentinelForCode(el.Code), text: el.Message}, Outcome: actor.MayHaveExecuted}
		}
		return &actor.RemoteError{Op: op, Node: node, Incarnation: inc, Target: target, Code: el.Code, Message: el.Message, Err: rejectionReason(el.Code)}
	case StatusPanic:
		return &actor.PanicError{Op: op, Node: node, Target: target, Value: el.Message}
	}
	code, outcome := el.Code, actor.NotExecuted
	if n := len(code) - len(MayHaveSuffix); n >= 0 && code[n:] == MayHaveSuffix {
		code, outcome = code[:n], actor.MayHaveExecuted
	}
	var reason error
	switch s := actor.SentinelForCode(code); {
	case s != nil:
		reason = &wireReason{sentinel: s, text: el.Message}
		if actor.Outcome(s) != outcome {
			// A code whose condition has another outcome by default
			// ("unreachable~may", "node_down" without "~may"): the
			// reply's outcome wins, and errors.Is matches the condition
			// only where its outcome can vary (no_process, bad_message).
			reason = &actor.OutcomeError{Outcome: outcome, Err: reason}
		}
	case code != "":
		reason = &codedReason{code: code, text: el.Message}
	default:
		reason = errors.New(el.Message)
	}
	return &actor.Error{Op: op, Node: node, Incarnation: inc, Target: target, Err: reason, Outcome: outcome}
}

// The codes of a handler's ended ctx (actor.ErrorCode).
const (
	ctxDeadlineCode = "context_deadline"
	ctxCanceledCode = "context_canceled"
)

// rejectionReason is the sentinel a rejection's code can mean, for
// errors.Is: actor.ErrReplyType. A code naming a sentinel of another
// outcome means nothing here: a rejection ran.
func rejectionReason(code string) error {
	if s := actor.SentinelForCode(code); s != nil && actor.Outcome(s) == actor.Executed {
		return s
	}
	return nil
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

// codedReason is a reason from the other side with the handler's own
// code (actor.Coded), so actor.ErrorCode finds it and the code passes on.
type codedReason struct {
	code string
	text string
}

func (c *codedReason) Error() string     { return c.text }
func (c *codedReason) ErrorCode() string { return c.code }

// Is matches a Reject error with the same code, as actor.RemoteError does.
func (c *codedReason) Is(target error) bool {
	t, ok := target.(actor.Coded)
	return ok && actor.SentinelForCode(c.code) == nil && t.ErrorCode() == c.code
}
