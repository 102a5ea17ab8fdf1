package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// Kind is a frame or batch element kind. See SPEC.md.
type Kind uint8

const (
	KindSend     Kind = 0x01
	KindCast     Kind = 0x02
	KindCall     Kind = 0x03
	KindRequest  Kind = 0x04
	KindReply    Kind = 0x05
	KindCancel   Kind = 0x06
	KindPing     Kind = 0x07
	KindPong     Kind = 0x08
	KindControl  Kind = 0x09
	KindBatch    Kind = 0x0A
	KindGoodbye  Kind = 0x0B
	KindTraced   Kind = 0x0C // a send, cast, call or request with its caller's trace context (trace.go)
	KindHeadered Kind = 0x0D // a send, cast, call, request or traced frame with its caller's headers (headers.go)
	maxKindValue      = KindHeadered
)

func (k Kind) String() string {
	switch k {
	case KindSend:
		return "send"
	case KindCast:
		return "cast"
	case KindCall:
		return "call"
	case KindRequest:
		return "request"
	case KindReply:
		return "reply"
	case KindCancel:
		return "cancel"
	case KindPing:
		return "ping"
	case KindPong:
		return "pong"
	case KindControl:
		return "control"
	case KindBatch:
		return "batch"
	case KindGoodbye:
		return "goodbye"
	case KindTraced:
		return "traced"
	case KindHeadered:
		return "headered"
	}
	return fmt.Sprintf("kind(0x%02x)", uint8(k))
}

// FrameHeader is the 4-byte big-endian length of kind+body.
const FrameHeader = 4

// Wire errors. A decode error closes the link that produced it.
var (
	ErrFrameTooLarge = errors.New("remote: frame exceeds MaxFrameSize")
	ErrTruncated     = errors.New("remote: truncated frame")
	ErrUnknownKind   = errors.New("remote: unknown frame kind")
	ErrMalformed     = errors.New("remote: malformed frame")
)

// Dec reads fields from a frame body. The first error sticks; every read
// after it returns zero values, so decoders check err once at the end.
// It never panics and never allocates more than the input holds.
type Dec struct {
	B   []byte
	Err error
	in  *Interner // names are interned when set (a link's reader)
}

func (d *Dec) fail(what string) {
	if d.Err == nil {
		d.Err = fmt.Errorf("%w: %s", ErrTruncated, what)
	}
	d.B = nil
}

func (d *Dec) U8(what string) uint8 {
	if len(d.B) < 1 {
		d.fail(what)
		return 0
	}
	v := d.B[0]
	d.B = d.B[1:]
	return v
}

func (d *Dec) u64(what string) uint64 {
	if len(d.B) < 8 {
		d.fail(what)
		return 0
	}
	v := binary.LittleEndian.Uint64(d.B)
	d.B = d.B[8:]
	return v
}

func (d *Dec) uvarint(what string) uint64 {
	v, n := binary.Uvarint(d.B)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.B = d.B[n:]
	return v
}

func (d *Dec) varint(what string) int64 {
	v, n := binary.Varint(d.B)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.B = d.B[n:]
	return v
}

// bytes returns a length-prefixed byte string aliasing the input.
func (d *Dec) bytes(what string) []byte {
	n := d.uvarint(what)
	if d.Err != nil {
		return nil
	}
	if n > uint64(len(d.B)) {
		d.fail(what)
		return nil
	}
	v := d.B[:n:n]
	d.B = d.B[n:]
	return v
}

func (d *Dec) Str(what string) string { return string(d.bytes(what)) }

// Bounds on the strings a peer chooses (version 5), so that none of them
// can make a span, a log line, a metric label or an error text as large
// as a frame.
const (
	// MaxNameLen bounds a type, function or registered target name: a
	// reader closes the link on a longer one before copying it, and a
	// writer refuses to send one (actor.ErrBadMessage).
	MaxNameLen = 1024
	// MaxErrorText bounds what a reader keeps of an error text (a failed
	// reply's or a terminated notification's message, a goodbye's reason)
	// and what a writer sends of one: the rest is cut, and the cut says
	// how long the text was. A code is cut at MaxNameLen.
	MaxErrorText = 4 << 10
)

// name is str for the strings that repeat from frame to frame (type,
// target and function names, node names): interned when d has an
// interner, so a steady stream decodes them without allocating. One over
// MaxNameLen is malformed.
func (d *Dec) name(what string) string {
	b := d.bytes(what)
	if len(b) > MaxNameLen {
		d.malformed("%s of %d bytes exceeds %d", what, len(b), MaxNameLen)
		return ""
	}
	if d.in == nil {
		return string(b)
	}
	return d.in.get(b)
}

// text is str cut at max bytes (cutText): only what is kept is copied.
func (d *Dec) text(what string, max int) string {
	b := d.bytes(what)
	if len(b) <= max {
		return string(b)
	}
	return cutText(string(b[:max]), len(b), max)
}

// CutText is s cut to at most max bytes, at a rune boundary, saying how
// long it was; s itself when it fits.
func CutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return cutText(s[:max], len(s), max)
}

// cutText is the start of a text of size bytes (head, at least max of
// them) cut to at most max bytes in all.
func cutText(head string, size, max int) string {
	suffix := fmt.Sprintf("... (cut from %d bytes)", size)
	n := max - len(suffix)
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(head[n]) {
		n--
	}
	return head[:n] + suffix
}

// Interner hands out one string per distinct name a link's reader meets.
// A peer chooses the names, so it is bounded: past the bound names are
// plain allocations again. Owned by one goroutine.
type Interner struct {
	m     map[string]string
	bytes int
	// recent is a direct-mapped cache in front of m (by length and last
	// byte): a type name and the run's target name repeat entry after
	// entry.
	recent [16]string
}

const (
	internMax      = 1024     // names kept per link
	internMaxBytes = 64 << 10 // their bytes per link
)

func (in *Interner) get(b []byte) string {
	h := len(b)
	if h > 0 {
		h = h*7 + int(b[h-1])
	}
	slot := &in.recent[h&15]
	if *slot == string(b) {
		return *slot
	}
	if s, ok := in.m[string(b)]; ok {
		*slot = s
		return s
	}
	s := string(b)
	*slot = s
	if len(in.m) < internMax && in.bytes+len(s) <= internMaxBytes {
		if in.m == nil {
			in.m = make(map[string]string)
		}
		in.m[s] = s
		in.bytes += len(s)
	}
	return s
}

func (d *Dec) malformed(format string, args ...any) {
	if d.Err == nil {
		d.Err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
	d.B = nil
}

// Encoding helpers: append to dst and return it.

func AppendUvarint(dst []byte, v uint64) []byte { return binary.AppendUvarint(dst, v) }
func appendVarint(dst []byte, v int64) []byte   { return binary.AppendVarint(dst, v) }
func appendU64(dst []byte, v uint64) []byte     { return binary.LittleEndian.AppendUint64(dst, v) }

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func AppendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// beginFrame reserves the length header and writes the kind; endFrame
// fills the length in. start is len(dst) before beginFrame.
func beginFrame(dst []byte, k Kind) (out []byte, start int) {
	start = len(dst)
	dst = append(dst, 0, 0, 0, 0, byte(k))
	return dst, start
}

func endFrame(dst []byte, start int) []byte {
	n := len(dst) - start - FrameHeader
	if n > math.MaxUint32 {
		n = math.MaxUint32 // caught by the size check of the writer
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst
}

// FrameLen returns the total size (header included) of the frame at the
// start of b, or 0 when b holds less than a header.
func FrameLen(b []byte) int {
	if len(b) < FrameHeader {
		return 0
	}
	return FrameHeader + int(binary.BigEndian.Uint32(b))
}
