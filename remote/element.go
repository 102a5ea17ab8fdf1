package remote

import (
	"encoding/binary"
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
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

	// msg, when set on an element being encoded, is the payload itself:
	// it is marshalled straight into the frame (Type names it, Payload is
	// unused). Only the encode functions that return an error take it.
	msg proto.Message
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

// ends are the two identities of a link, from the point of view of the
// side encoding or decoding: PIDs of either end travel as a tag and an ID.
type ends struct {
	selfNode string
	selfInc  uint64
	peerNode string
	peerInc  uint64
	// in interns the names decoded with these ends: set on a link's, whose
	// reader alone decodes with it.
	in *interner
	// maxMsg, when not 0, bounds a message this side encodes (el.msg):
	// MaxMessageSize, which the peer would refuse anyway.
	maxMsg int
}

const (
	pidZero     = 0
	pidWriter   = 1 // the node that wrote the frame
	pidReader   = 2 // the node that reads the frame
	pidExplicit = 3
)

func (e *ends) appendPID(dst []byte, p actor.PID) []byte {
	switch {
	case p.IsZero():
		return append(dst, pidZero)
	case p.Node == e.selfNode && p.Incarnation == e.selfInc:
		return appendUvarint(append(dst, pidWriter), p.ID)
	case p.Node == e.peerNode && p.Incarnation == e.peerInc:
		return appendUvarint(append(dst, pidReader), p.ID)
	}
	dst = appendString(append(dst, pidExplicit), p.Node)
	dst = appendU64(dst, p.Incarnation)
	return appendUvarint(dst, p.ID)
}

func (e *ends) readPID(d *dec) actor.PID {
	switch tag := d.u8("pid tag"); tag {
	case pidZero:
		return actor.PID{}
	case pidWriter:
		return actor.PID{Node: e.peerNode, Incarnation: e.peerInc, ID: d.uvarint("pid id")}
	case pidReader:
		return actor.PID{Node: e.selfNode, Incarnation: e.selfInc, ID: d.uvarint("pid id")}
	case pidExplicit:
		node := d.name("pid node")
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

func (e *ends) appendTarget(dst []byte, to actor.PID, name string) []byte {
	if name != "" {
		return appendString(append(dst, targetName), name)
	}
	return e.appendPID(append(dst, targetPID), to)
}

func (e *ends) readTarget(d *dec, el *Element) {
	switch tag := d.u8("target tag"); tag {
	case targetPID:
		el.To = e.readPID(d)
	case targetName:
		el.ToName = d.name("target name")
		if el.ToName == "" && d.err == nil {
			d.malformed("empty target name")
		}
	default:
		d.malformed("target tag %d", tag)
	}
}

// appendBody encodes el's body (no kind, no length) for its kind; its
// payload, if any, must already be bytes (el.msg nil: see encodeBody).
func (e *ends) appendBody(dst []byte, el *Element) []byte {
	dst, _ = e.encodeBody(dst, el)
	return dst
}

// encodeBody is appendBody for any element: a message in el.msg is
// encoded in place. On an error (it wraps actor.ErrBadMessage) the bytes
// appended so far are left in the result; callers drop it.
func (e *ends) encodeBody(dst []byte, el *Element) ([]byte, error) {
	var err error
	switch el.Kind {
	case KindSend:
		dst = e.appendTarget(dst, el.To, el.ToName)
		dst = e.appendPID(dst, el.Sender)
		dst, err = e.payload(dst, el)
	case KindCast:
		dst = appendString(dst, el.Fn)
		dst, err = e.payload(dst, el)
	case KindCall:
		dst = appendUvarint(dst, el.ID)
		dst = appendVarint(dst, el.Deadline)
		dst = appendString(dst, el.Fn)
		dst, err = e.payload(dst, el)
	case KindRequest:
		dst = appendUvarint(dst, el.ID)
		dst = appendVarint(dst, el.Deadline)
		dst = e.appendTarget(dst, el.To, el.ToName)
		dst = e.appendPID(dst, el.Sender)
		dst, err = e.payload(dst, el)
	case KindReply:
		dst = appendUvarint(dst, el.ID)
		dst = append(dst, byte(el.Status))
		if el.Status == StatusOK {
			dst, err = e.payload(dst, el)
		} else {
			dst = appendString(dst, el.Code)
			dst = appendString(dst, el.Message)
		}
	case KindCancel:
		dst = appendUvarint(dst, el.ID)
	case KindPing, KindPong:
	case KindControl:
		dst = e.appendControl(dst, el.Control)
	case KindGoodbye:
		dst = appendString(dst, el.Reason)
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
func (e *ends) payload(dst []byte, el *Element) ([]byte, error) {
	mark := len(dst)
	out, err := appendPayload(dst, el)
	if err != nil || e.maxMsg == 0 || el.msg == nil || len(out)-mark <= e.maxMsg {
		return out, err
	}
	// The message's length follows the type name.
	typLen := len(appendString(nil, el.Type))
	size, k := binary.Uvarint(out[mark+typLen:])
	if k > 0 && size > uint64(e.maxMsg) {
		return out[:mark], fmt.Errorf("%w: %s of %d bytes exceeds MaxMessageSize %d", actor.ErrBadMessage, el.Type, size, e.maxMsg)
	}
	return out, nil
}

// appendFrame encodes el as one whole frame; its payload, if any, must
// already be bytes (see encodeFrame).
func (e *ends) appendFrame(dst []byte, el *Element) []byte {
	dst, start := beginFrame(dst, el.Kind)
	dst = e.appendBody(dst, el)
	return endFrame(dst, start)
}

// encodeFrame is appendFrame for any element (a message in el.msg is
// encoded in place). On an error dst is returned as it was given.
func (e *ends) encodeFrame(dst []byte, el *Element) ([]byte, error) {
	mark := len(dst)
	dst, start := beginFrame(dst, el.Kind)
	dst, err := e.encodeBody(dst, el)
	if err != nil {
		return dst[:mark], err
	}
	return endFrame(dst, start), nil
}

// appendElement encodes el as one batch entry: kind, body length, body;
// its payload, if any, must already be bytes (see encodeElement).
func (e *ends) appendElement(dst []byte, el *Element) []byte {
	dst, _ = e.encodeElement(dst, el)
	return dst
}

// encodeElement is appendElement for any element (a message in el.msg
// is encoded in place). On an error dst is returned as it was given.
func (e *ends) encodeElement(dst []byte, el *Element) ([]byte, error) {
	mark := len(dst)
	dst = append(dst, byte(el.Kind))
	// Reserve a fixed 4-byte length: cheaper than encoding twice.
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, err := e.encodeBody(dst, el)
	if err != nil {
		return dst[:mark], err
	}
	putU32(dst[at:], uint32(len(dst)-at-4))
	return dst, nil
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}
func getU32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// decodeBody decodes the body of a frame or element of kind k.
func (e *ends) decodeBody(k Kind, body []byte, el *Element) error {
	*el = Element{Kind: k}
	d := dec{b: body, in: e.in}
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
		el.Status = Status(d.u8("status"))
		if el.Status > maxStatus && d.err == nil {
			d.malformed("reply status %d", el.Status)
		}
		if el.Status == StatusOK {
			el.Type = d.name("type")
			el.Payload = d.bytes("payload")
		} else {
			el.Code = d.str("code")
			el.Message = d.str("message")
		}
	case KindCancel:
		el.ID = d.uvarint("id")
	case KindPing, KindPong:
	case KindControl:
		el.Control = e.readControl(&d)
	case KindGoodbye:
		el.Reason = d.str("reason")
		switch f := d.u8("clean"); f {
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
	if d.err == nil && len(d.b) != 0 {
		d.malformed("%d trailing bytes after %s", len(d.b), k)
	}
	return d.err
}

// batchIter walks the entries of a batch frame body.
type batchIter struct {
	d     dec
	left  uint64
	ends  *ends
	index int
}

func (e *ends) newBatchIter(body []byte) (*batchIter, error) {
	it := &batchIter{d: dec{b: body}, ends: e}
	it.left = it.d.uvarint("batch count")
	if it.d.err != nil {
		return nil, it.d.err
	}
	// Each entry takes at least 5 bytes: refuse impossible counts early.
	if it.left > uint64(len(it.d.b))/5+1 {
		return nil, fmt.Errorf("%w: batch claims %d entries in %d bytes", ErrMalformed, it.left, len(it.d.b))
	}
	return it, nil
}

// next decodes the next entry into el; ok is false at the end.
func (it *batchIter) next(el *Element) (ok bool, err error) {
	if it.left == 0 {
		if len(it.d.b) != 0 {
			return false, fmt.Errorf("%w: %d trailing bytes after batch", ErrMalformed, len(it.d.b))
		}
		return false, nil
	}
	it.left--
	it.index++
	k := Kind(it.d.u8("entry kind"))
	if len(it.d.b) < 4 && it.d.err == nil {
		it.d.fail("entry length")
	}
	if it.d.err != nil {
		return false, it.d.err
	}
	n := getU32(it.d.b)
	it.d.b = it.d.b[4:]
	if uint64(n) > uint64(len(it.d.b)) {
		return false, fmt.Errorf("%w: batch entry %d claims %d bytes, %d left", ErrTruncated, it.index, n, len(it.d.b))
	}
	body := it.d.b[:n:n]
	it.d.b = it.d.b[n:]
	switch k {
	case KindSend, KindCast, KindCall, KindRequest, KindReply, KindCancel:
	default:
		return false, fmt.Errorf("%w: %s is not allowed in a batch", ErrMalformed, k)
	}
	if err := it.ends.decodeBody(k, body, el); err != nil {
		return false, fmt.Errorf("batch entry %d: %w", it.index, err)
	}
	return true, nil
}
