package remote

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
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
	maxKindValue      = KindGoodbye
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
	}
	return fmt.Sprintf("kind(0x%02x)", uint8(k))
}

// frameHeader is the 4-byte big-endian length of kind+body.
const frameHeader = 4

// Wire errors. A decode error closes the link that produced it.
var (
	ErrFrameTooLarge = errors.New("remote: frame exceeds MaxFrameSize")
	ErrTruncated     = errors.New("remote: truncated frame")
	ErrUnknownKind   = errors.New("remote: unknown frame kind")
	ErrMalformed     = errors.New("remote: malformed frame")
)

// dec reads fields from a frame body. The first error sticks; every read
// after it returns zero values, so decoders check err once at the end.
// It never panics and never allocates more than the input holds.
type dec struct {
	b   []byte
	err error
	in  *interner // names are interned when set (a link's reader)
}

func (d *dec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrTruncated, what)
	}
	d.b = nil
}

func (d *dec) u8(what string) uint8 {
	if len(d.b) < 1 {
		d.fail(what)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) u64(what string) uint64 {
	if len(d.b) < 8 {
		d.fail(what)
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *dec) uvarint(what string) uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) varint(what string) int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes returns a length-prefixed byte string aliasing the input.
func (d *dec) bytes(what string) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) str(what string) string { return string(d.bytes(what)) }

// name is str for the strings that repeat from frame to frame (type,
// target and function names, node names): interned when d has an
// interner, so a steady stream decodes them without allocating.
func (d *dec) name(what string) string {
	b := d.bytes(what)
	if d.in == nil {
		return string(b)
	}
	return d.in.get(b)
}

// interner hands out one string per distinct name a link's reader meets.
// A peer chooses the names, so it is bounded: past the bound names are
// plain allocations again. Owned by one goroutine.
type interner struct {
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

func (in *interner) get(b []byte) string {
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

func (d *dec) malformed(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
	d.b = nil
}

// Encoding helpers: append to dst and return it.

func appendUvarint(dst []byte, v uint64) []byte { return binary.AppendUvarint(dst, v) }
func appendVarint(dst []byte, v int64) []byte   { return binary.AppendVarint(dst, v) }
func appendU64(dst []byte, v uint64) []byte     { return binary.LittleEndian.AppendUint64(dst, v) }

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func appendString(dst []byte, s string) []byte {
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
	n := len(dst) - start - frameHeader
	if n > math.MaxUint32 {
		n = math.MaxUint32 // caught by the size check of the writer
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst
}

// FrameLen returns the total size (header included) of the frame at the
// start of b, or 0 when b holds less than a header.
func frameLen(b []byte) int {
	if len(b) < frameHeader {
		return 0
	}
	return frameHeader + int(binary.BigEndian.Uint32(b))
}
