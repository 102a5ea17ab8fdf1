package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/nodename"
	"google.golang.org/protobuf/proto"
)

// Element is one decoded message: a whole frame, or one entry of a batch.
// Byte fields alias the frame buffer they were decoded from; they are
// valid until the next frame is read.
type Element struct {
	Kind     Kind
	ID       uint64    // call, request, reply, cancel: the caller's id
	Deadline int64     // call, request: absolute deadline, Unix ns; 0 = none
	To       actor.PID // send, request: the target, unless ToName is set
	ToName   string    // send, request: a registered name on the receiver
	Sender   actor.PID // send, request: the sending actor (zero if none)
	Fn       string    // cast, call: the function name
	Type     string    // payload message full name ("" = no payload)
	Payload  []byte    // payload bytes (protobuf)
	Status   Status    // reply
	Code     string    // reply: error code
	Message  string    // reply: error text
	Control  *Control  // control frames
	Reason   string    // goodbye
	Clean    bool      // goodbye: every call and request taken on this link was answered before it
	// Trace, when not zero on a send, cast, call or request, is its
	// caller's trace context: the element travels as a traced frame
	// (trace.go). Zero, the bytes are those of an untraced element.
	Trace Trace
	// Headers, when not empty on a send, cast, call or request, are its
	// caller's headers: the element travels as a headered frame
	// (headers.go), around its traced frame if it has a trace.
	Headers actor.Headers

	// Msg, when set on an element being encoded, is the payload itself:
	// it is marshalled straight into the frame (Type names it, Payload is
	// unused). Only the encode functions that return an error take it.
	Msg proto.Message
}

// Status is a reply's outcome class on the wire.
type Status uint8

const (
	StatusOK       Status = 0 // Type/Payload hold the result
	StatusRejected Status = 1 // the handler returned an error: Code, Message
	StatusPanic    Status = 2 // the handler panicked: Message
	StatusError    Status = 3 // the runtime refused or failed: Code names a sentinel
	maxStatus             = StatusError
)

// Ends are the two identities of a link, from the point of view of the
// side encoding or decoding: PIDs of either end travel as a tag and an ID.
type Ends struct {
	SelfNode string
	SelfInc  uint64
	PeerNode string
	PeerInc  uint64
	// In interns the names decoded with these ends: set on a link's, whose
	// reader alone decodes with it.
	In *Interner
	// MaxMsg, when not 0, bounds a message this side encodes (el.msg):
	// MaxMessageSize, which the peer would refuse anyway.
	MaxMsg int
}

const (
	pidZero     = 0
	pidWriter   = 1 // the node that wrote the frame
	pidReader   = 2 // the node that reads the frame
	pidExplicit = 3
)

func (e *Ends) appendPID(dst []byte, p actor.PID) []byte {
	switch {
	case p.IsZero():
		return append(dst, pidZero)
	case p.Node == e.SelfNode && p.Incarnation == e.SelfInc:
		return AppendUvarint(append(dst, pidWriter), p.ID)
	case p.Node == e.PeerNode && p.Incarnation == e.PeerInc:
		return AppendUvarint(append(dst, pidReader), p.ID)
	}
	dst = AppendString(append(dst, pidExplicit), p.Node)
	dst = appendU64(dst, p.Incarnation)
	return AppendUvarint(dst, p.ID)
}

func (e *Ends) readPID(d *Dec) actor.PID {
	switch tag := d.U8("pid tag"); tag {
	case pidZero:
		return actor.PID{}
	case pidWriter:
		return actor.PID{Node: e.PeerNode, Incarnation: e.PeerInc, ID: d.uvarint("pid id")}
	case pidReader:
		return actor.PID{Node: e.SelfNode, Incarnation: e.SelfInc, ID: d.uvarint("pid id")}
	case pidExplicit:
		node := d.name("pid node")
		if d.Err == nil && !nodename.Valid(node) {
			d.malformed("pid node name %s: want %s", nodename.Quote(node), nodename.Rule)
		}
		inc := d.u64("pid incarnation")
		return actor.PID{Node: node, Incarnation: inc, ID: d.uvarint("pid id")}
	default:
		d.malformed("pid tag %d", tag)
		return actor.PID{}
	}
}

const (
	targetPID  = 0
	targetName = 1
)

func (e *Ends) appendTarget(dst []byte, to actor.PID, name string) []byte {
	if name != "" {
		return AppendString(append(dst, targetName), name)
	}
	return e.appendPID(append(dst, targetPID), to)
}

func (e *Ends) readTarget(d *Dec, el *Element) {
	switch tag := d.U8("target tag"); tag {
	case targetPID:
		el.To = e.readPID(d)
	case targetName:
		el.ToName = d.name("target name")
		if el.ToName == "" && d.Err == nil {
			d.malformed("empty target name")
		}
	default:
		d.malformed("target tag %d", tag)
	}
}

// appendBody encodes el's body (no kind, no length) for its kind; its
// payload, if any, must already be bytes (el.msg nil: see encodeBody).
func (e *Ends) appendBody(dst []byte, el *Element) []byte {
	dst, _ = e.encodeBody(dst, el)
	return dst
}

// encodeBody is appendBody for any element: a message in el.msg is
// encoded in place. On an error (it wraps actor.ErrBadMessage) the bytes
// appended so far are left in the result; callers drop it.
func (e *Ends) encodeBody(dst []byte, el *Element) ([]byte, error) {
	var err error
	if el.headered() {
		dst = appendHeadersHead(dst, el.Headers)
		if el.traced() {
			dst = append(dst, byte(KindTraced))
		} else {
			dst = append(dst, byte(el.Kind))
		}
	}
	if el.traced() {
		dst = append(appendTraceHead(dst, &el.Trace), byte(el.Kind))
	}
	switch el.Kind {
	case KindSend:
		dst = e.appendTarget(dst, el.To, el.ToName)
		dst = e.appendPID(dst, el.Sender)
		dst, err = e.payload(dst, el)
	case KindCast:
		dst = AppendString(dst, el.Fn)
		dst, err = e.payload(dst, el)
	case KindCall:
		dst = AppendUvarint(dst, el.ID)
		dst = appendVarint(dst, el.Deadline)
		dst = AppendString(dst, el.Fn)
		dst, err = e.payload(dst, el)
	case KindRequest:
		dst = AppendUvarint(dst, el.ID)
		dst = appendVarint(dst, el.Deadline)
		dst = e.appendTarget(dst, el.To, el.ToName)
		dst = e.appendPID(dst, el.Sender)
		dst, err = e.payload(dst, el)
	case KindReply:
		dst = AppendUvarint(dst, el.ID)
		dst = append(dst, byte(el.Status))
		if el.Status == StatusOK {
			dst, err = e.payload(dst, el)
		} else {
			dst = AppendString(dst, el.Code)
			dst = AppendString(dst, el.Message)
		}
	case KindCancel:
		dst = AppendUvarint(dst, el.ID)
	case KindPing, KindPong:
	case KindControl:
		dst = e.appendControl(dst, el.Control)
	case KindGoodbye:
		dst = AppendString(dst, el.Reason)
		if el.Clean {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
	}
	return dst, err
}

// payload is appendPayload, refusing a message (el.msg) larger than
// maxMsg: the peer would refuse it before decoding it.
func (e *Ends) payload(dst []byte, el *Element) ([]byte, error) {
	mark := len(dst)
	out, err := appendPayload(dst, el)
	if err != nil || e.MaxMsg == 0 || el.Msg == nil || len(out)-mark <= e.MaxMsg {
		return out, err
	}
	// The message's length follows the type name.
	typLen := len(AppendString(nil, el.Type))
	size, k := binary.Uvarint(out[mark+typLen:])
	if k > 0 && size > uint64(e.MaxMsg) {
		return out[:mark], fmt.Errorf("%w: %s of %d bytes exceeds MaxMessageSize %d", actor.ErrBadMessage, el.Type, size, e.MaxMsg)
	}
	return out, nil
}

// checkNames refuses an element with a name the peer would close the
// link on (over MaxNameLen). The encoders that return an error check it;
// AppendFrame, for tests, writes whatever it is given.
func checkNames(el *Element) error {
	if len(el.Fn) > MaxNameLen || len(el.ToName) > MaxNameLen || len(el.Type) > MaxNameLen {
		return fmt.Errorf("%w: a name of more than %d bytes (function %d, target %d, type %d): the peer would close the link", actor.ErrBadMessage, MaxNameLen, len(el.Fn), len(el.ToName), len(el.Type))
	}
	if el.Headers != nil {
		return checkHeaders(el.Headers)
	}
	return nil
}

// traced reports whether el travels as a traced frame.
func (el *Element) traced() bool { return !el.Trace.IsZero() && traceable(el.Kind) }

// wireKind is the kind el is framed as: KindHeadered for an element with
// headers, KindTraced for a traced one.
func (el *Element) wireKind() Kind {
	if el.headered() {
		return KindHeadered
	}
	if el.traced() {
		return KindTraced
	}
	return el.Kind
}

// AppendFrame encodes el as one whole frame; its payload, if any, must
// already be bytes (see encodeFrame).
func (e *Ends) AppendFrame(dst []byte, el *Element) []byte {
	dst, start := beginFrame(dst, el.wireKind())
	dst = e.appendBody(dst, el)
	return endFrame(dst, start)
}

// EncodeFrame is appendFrame for any element (a message in el.msg is
// encoded in place). On an error dst is returned as it was given.
func (e *Ends) EncodeFrame(dst []byte, el *Element) ([]byte, error) {
	if err := checkNames(el); err != nil {
		return dst, err
	}
	mark := len(dst)
	dst, start := beginFrame(dst, el.wireKind())
	dst, err := e.encodeBody(dst, el)
	if err != nil {
		return dst[:mark], err
	}
	return endFrame(dst, start), nil
}

// appendElement encodes el as one batch entry: kind, body length, body;
// its payload, if any, must already be bytes (see encodeElement).
func (e *Ends) appendElement(dst []byte, el *Element) []byte {
	dst, _ = e.EncodeElement(dst, el)
	return dst
}

// EncodeElement is appendElement for any element (a message in el.msg
// is encoded in place). On an error dst is returned as it was given.
func (e *Ends) EncodeElement(dst []byte, el *Element) ([]byte, error) {
	if err := checkNames(el); err != nil {
		return dst, err
	}
	mark := len(dst)
	dst = append(dst, byte(el.wireKind()))
	// Reserve a fixed 4-byte length: cheaper than encoding twice.
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, err := e.encodeBody(dst, el)
	if err != nil {
		return dst[:mark], err
	}
	PutU32(dst[at:], uint32(len(dst)-at-4))
	return dst, nil
}

func PutU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}
func GetU32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// DecodeBody decodes the body of a frame or element of kind k. A traced
// body decodes into the element it wraps, with its Trace set.
func (e *Ends) DecodeBody(k Kind, body []byte, el *Element) error {
	if k == KindHeadered {
		d := Dec{B: body}
		h, inner := readHeaders(&d)
		if d.Err != nil {
			*el = Element{Kind: k}
			return d.Err
		}
		err := e.DecodeBody(inner, d.B, el)
		el.Headers = h
		return err
	}
	if k == KindTraced {
		var t Trace
		d := Dec{B: body}
		inner := readTrace(&d, &t)
		if d.Err != nil {
			*el = Element{Kind: k}
			return d.Err
		}
		err := e.DecodeBody(inner, d.B, el)
		el.Trace = t
		return err
	}
	*el = Element{Kind: k}
	d := Dec{B: body, in: e.In}
	switch k {
	case KindSend:
		e.readTarget(&d, el)
		el.Sender = e.readPID(&d)
		el.Type = d.name("type")
		el.Payload = d.bytes("payload")
	case KindCast:
		el.Fn = d.name("function")
		el.Type = d.name("type")
		el.Payload = d.bytes("payload")
	case KindCall:
		el.ID = d.uvarint("id")
		el.Deadline = d.varint("deadline")
		el.Fn = d.name("function")
		el.Type = d.name("type")
		el.Payload = d.bytes("payload")
	case KindRequest:
		el.ID = d.uvarint("id")
		el.Deadline = d.varint("deadline")
		e.readTarget(&d, el)
		el.Sender = e.readPID(&d)
		el.Type = d.name("type")
		el.Payload = d.bytes("payload")
	case KindReply:
		el.ID = d.uvarint("id")
		el.Status = Status(d.U8("status"))
		if el.Status > maxStatus && d.Err == nil {
			d.malformed("reply status %d", el.Status)
		}
		if el.Status == StatusOK {
			el.Type = d.name("type")
			el.Payload = d.bytes("payload")
		} else {
			el.Code = d.text("code", MaxNameLen)
			el.Message = d.text("message", MaxErrorText)
		}
	case KindCancel:
		el.ID = d.uvarint("id")
	case KindPing, KindPong:
	case KindControl:
		el.Control = e.readControl(&d)
	case KindGoodbye:
		el.Reason = d.text("reason", MaxErrorText)
		switch f := d.U8("clean"); f {
		case 0, 1:
			el.Clean = f == 1
		default:
			d.malformed("goodbye clean flag %d", f)
		}
	case KindBatch:
		d.malformed("a batch inside a batch")
	default:
		return fmt.Errorf("%w 0x%02x", ErrUnknownKind, uint8(k))
	}
	if d.Err == nil && len(d.B) != 0 {
		d.malformed("%d trailing bytes after %s", len(d.B), k)
	}
	return d.Err
}

// batchIter walks the entries of a batch frame body.
type batchIter struct {
	d     Dec
	Left  uint64
	ends  *Ends
	index int
}

func (e *Ends) NewBatchIter(body []byte) (*batchIter, error) {
	it := &batchIter{d: Dec{B: body}, ends: e}
	it.Left = it.d.uvarint("batch count")
	if it.d.Err != nil {
		return nil, it.d.Err
	}
	// Each entry takes at least 5 bytes: refuse impossible counts early.
	if it.Left > uint64(len(it.d.B))/5+1 {
		return nil, fmt.Errorf("%w: batch claims %d entries in %d bytes", ErrMalformed, it.Left, len(it.d.B))
	}
	return it, nil
}

// Next decodes the next entry into el; ok is false at the end.
func (it *batchIter) Next(el *Element) (ok bool, err error) {
	if it.Left == 0 {
		if len(it.d.B) != 0 {
			return false, fmt.Errorf("%w: %d trailing bytes after batch", ErrMalformed, len(it.d.B))
		}
		return false, nil
	}
	it.Left--
	it.index++
	k := Kind(it.d.U8("entry kind"))
	if len(it.d.B) < 4 && it.d.Err == nil {
		it.d.fail("entry length")
	}
	if it.d.Err != nil {
		return false, it.d.Err
	}
	n := GetU32(it.d.B)
	it.d.B = it.d.B[4:]
	if uint64(n) > uint64(len(it.d.B)) {
		return false, fmt.Errorf("%w: batch entry %d claims %d bytes, %d left", ErrTruncated, it.index, n, len(it.d.B))
	}
	body := it.d.B[:n:n]
	it.d.B = it.d.B[n:]
	switch k {
	case KindSend, KindCast, KindCall, KindRequest, KindReply, KindCancel, KindTraced, KindHeadered:
	default:
		return false, fmt.Errorf("%w: %s is not allowed in a batch", ErrMalformed, k)
	}
	if err := it.ends.DecodeBody(k, body, el); err != nil {
		return false, fmt.Errorf("batch entry %d: %w", it.index, err)
	}
	return true, nil
}
