package wire

import (
	"fmt"
	"math"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// What a payload costs decoded. A few bytes of protobuf can decode into
// many times their size: an empty element of a repeated message field is
// 2 bytes and a pointer plus a struct decoded (a ListValue of empty
// Values decodes into 36 times its size). So a node bounds what a payload
// may decode into by its size: at most DecodeFactor bytes per encoded
// byte, beyond the message's own struct. A payload that would decode
// into more is refused before it is decoded (actor.ErrBadMessage), and
// admission counts what a call or cast decodes into, not its encoded
// size (remote/admission.go).
//
// The estimate comes from the schema, once per type: the most any field
// reachable from the type can decode into per encoded byte (amp). A type
// whose worst case is within the factor, most types, costs nothing more
// per message: its estimate is root + amp × size. A payload of a type that
// could go past it, and whose worst case is more than scanAbove bytes,
// is walked first: its fields' tags and lengths, no allocation, charging
// what each one decodes into (scan). The estimate is an upper bound of
// what protobuf-go allocates, within the size classes of Go's allocator.

// DecodeFactor is the most a payload may decode into, per byte of it,
// beyond its message's own struct.
const DecodeFactor = 16

// scanAbove: a payload whose worst case is within this many bytes is
// not walked; its worst case is its estimate.
const scanAbove = 64 << 10

// maxScanDepth is protobuf-go's own recursion limit: a payload nested
// deeper does not decode.
const maxScanDepth = 10000

// decodeCost is what the schema of one type says about decoding it.
type decodeCost struct {
	md   protoreflect.MessageDescriptor
	root int // the message's own struct
	amp  int // the most any reachable field decodes into per encoded byte
	// size is the struct size of every message type reachable from md.
	size map[protoreflect.FullName]int
}

func newDecodeCost(md protoreflect.MessageDescriptor) *decodeCost {
	c := &decodeCost{md: md, size: map[protoreflect.FullName]int{}, amp: 2}
	c.walk(md)
	c.root = c.size[md.FullName()]
	return c
}

// walk fills size and amp for md and what it reaches.
func (c *decodeCost) walk(md protoreflect.MessageDescriptor) {
	if _, seen := c.size[md.FullName()]; seen {
		return
	}
	c.size[md.FullName()] = structSize(md)
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		var subs []protoreflect.MessageDescriptor
		if fd.IsMap() {
			if v := fd.MapValue().Message(); v != nil {
				subs = append(subs, v)
			}
		} else if m := fd.Message(); m != nil {
			subs = append(subs, m)
		}
		for _, m := range subs {
			c.walk(m)
		}
		c.amp = max(c.amp, c.fieldAmp(fd))
	}
}

// fieldAmp is the most one element of fd decodes into per byte of its
// encoding (rounded up). Under walk, once the types it reaches are sized.
func (c *decodeCost) fieldAmp(fd protoreflect.FieldDescriptor) int {
	tag := protowire.SizeTag(fd.Number())
	ratio := func(cost, bytes int) int { return (cost + bytes - 1) / bytes }
	switch {
	case fd.IsMap():
		cost := mapEntryCost(fd)
		if v := fd.MapValue().Message(); v != nil {
			cost += c.size[v.FullName()]
		}
		return ratio(cost, tag+1)
	case fd.Message() != nil:
		// An empty element: tag and length 0 (a group: its two tags).
		return ratio(c.elementCost(fd, c.size[fd.Message().FullName()]), tag+1)
	case fd.IsList() && isPackable(fd):
		elem, minBytes := scalarSize(fd)
		return max(ratio(2*elem, minBytes), ratio(2*elem, tag+minBytes))
	case fd.IsList():
		return ratio(2*slotSize(fd), tag+1)
	default:
		return ratio(c.elementCost(fd, 0), tag+1)
	}
}

// elementCost is what one occurrence of fd decodes into beyond its
// bytes' content, sub the struct size of its message (0 for a scalar).
func (c *decodeCost) elementCost(fd protoreflect.FieldDescriptor, sub int) int {
	switch {
	case fd.IsList():
		return 2*slotSize(fd) + sub // the slot, with append's growth, and the element
	case fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic():
		return 16 + slotSize(fd) + sub // the wrapper the interface holds
	case fd.Message() != nil:
		return sub
	case fd.HasPresence() && fd.Kind() != protoreflect.StringKind && fd.Kind() != protoreflect.BytesKind:
		return 8 // a pointer to the scalar
	}
	return 0
}

// Estimate is what a payload b of this type decodes into, and an error
// (wrapping actor.ErrBadMessage) when that is more than DecodeFactor
// times its size beyond the message's own struct.
func (c *decodeCost) estimate(typ string, b []byte) (int, error) {
	worst := c.root + c.amp*len(b)
	if c.amp <= DecodeFactor || worst <= scanAbove {
		return worst, nil
	}
	got := c.root + c.scan(c.md, b, 0)
	if got > c.root+DecodeFactor*len(b) {
		return got, fmt.Errorf("%w: a %s of %d bytes would decode into about %d bytes, more than %d times its size", actor.ErrBadMessage, quoteName(typ), len(b), got, DecodeFactor)
	}
	return got, nil
}

// scan is what the fields in b, a message of type md, decode into beyond
// md's own struct. Bytes that do not parse end the walk (the decoder
// refuses them anyway).
func (c *decodeCost) scan(md protoreflect.MessageDescriptor, b []byte, depth int) int {
	if depth > maxScanDepth {
		return 0
	}
	cost := 0
	fields := md.Fields()
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return cost
		}
		fd := fields.ByNumber(num)
		m := protowire.ConsumeFieldValue(num, wt, b[n:])
		if m < 0 {
			return cost
		}
		field, value := b[:n+m], b[n:n+m]
		b = b[n+m:]
		if fd == nil || !wireTypeFits(fd, wt) {
			cost += 2 * len(field) // kept as unknown bytes, appended
			continue
		}
		switch {
		case fd.IsMap():
			v, _ := protowire.ConsumeBytes(value)
			cost += mapEntryCost(fd) + c.scanEntry(fd, v, depth+1)
		case fd.Message() != nil:
			sub := fd.Message()
			var body []byte
			if wt == protowire.StartGroupType {
				body = value[:len(value)-protowire.SizeTag(num)] // less its end tag
			} else {
				body, _ = protowire.ConsumeBytes(value)
			}
			cost += c.elementCost(fd, c.size[sub.FullName()]) + c.scan(sub, body, depth+1)
		case wt == protowire.BytesType && fd.IsList() && isPackable(fd):
			v, _ := protowire.ConsumeBytes(value)
			elem, _ := scalarSize(fd)
			cost += 2 * elem * packedCount(fd, v)
		case wt == protowire.BytesType: // a string or bytes
			v, _ := protowire.ConsumeBytes(value)
			cost += c.elementCost(fd, 0) + len(v)
		default: // a scalar
			cost += c.elementCost(fd, 0)
		}
	}
	return cost
}

// scanEntry is what a map entry's key and value decode into beyond its
// slots: their contents.
func (c *decodeCost) scanEntry(fd protoreflect.FieldDescriptor, b []byte, depth int) int {
	cost, sawValue := 0, false
	val := fd.MapValue().Message()
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return cost
		}
		m := protowire.ConsumeFieldValue(num, wt, b[n:])
		if m < 0 {
			return cost
		}
		value := b[n : n+m]
		b = b[n+m:]
		if wt != protowire.BytesType {
			continue
		}
		v, _ := protowire.ConsumeBytes(value)
		if num == 2 && val != nil {
			sawValue = true
			cost += c.size[val.FullName()] + c.scan(val, v, depth)
		} else {
			cost += len(v) // a string key or value, bytes
		}
	}
	if val != nil && !sawValue {
		cost += c.size[val.FullName()] // an entry without its value gets an empty one
	}
	return cost
}

// wireTypeFits reports whether a field of fd may arrive as wt (what the
// decoder accepts; anything else is kept as unknown bytes).
func wireTypeFits(fd protoreflect.FieldDescriptor, wt protowire.Type) bool {
	switch fd.Kind() {
	case protoreflect.GroupKind:
		return wt == protowire.StartGroupType
	case protoreflect.MessageKind, protoreflect.StringKind, protoreflect.BytesKind:
		return wt == protowire.BytesType
	}
	if fd.IsList() && wt == protowire.BytesType {
		return true // packed
	}
	_, minBytes := scalarSize(fd)
	switch minBytes {
	case 4:
		return wt == protowire.Fixed32Type
	case 8:
		return wt == protowire.Fixed64Type
	}
	return wt == protowire.VarintType
}

// packedCount is the number of elements in a packed run v of fd.
func packedCount(fd protoreflect.FieldDescriptor, v []byte) int {
	switch _, minBytes := scalarSize(fd); minBytes {
	case 4, 8:
		return len(v) / minBytes
	}
	n := 0
	for _, x := range v {
		if x < 0x80 {
			n++
		}
	}
	return n
}

func isPackable(fd protoreflect.FieldDescriptor) bool {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return false
	}
	return true
}

// scalarSize is a scalar kind's size decoded and its smallest encoding.
func scalarSize(fd protoreflect.FieldDescriptor) (size, minBytes int) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return 1, 1
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Uint32Kind, protoreflect.EnumKind:
		return 4, 1
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		return 8, 1
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return 4, 4
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return 8, 8
	}
	return 8, 1
}

// slotSize is what a field takes in its message's struct (or, repeated,
// per element in its slice; in a map, per key or value).
func slotSize(fd protoreflect.FieldDescriptor) int {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return 16
	case protoreflect.BytesKind:
		return 24
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return 8
	}
	s, _ := scalarSize(fd)
	return max(s, 8) // aligned
}

// mapEntryCost is a map entry's slots, with the map's growth and
// bookkeeping.
func mapEntryCost(fd protoreflect.FieldDescriptor) int {
	return 2*(slotSize(fd.MapKey())+slotSize(fd.MapValue())) + 16
}

// structSize is the size of md's generated struct, rounded up to an
// allocation: the message state, size cache and unknown fields, then a
// slot per field (a list's slice header, a map's pointer, one interface
// per oneof).
func structSize(md protoreflect.MessageDescriptor) int {
	n := 8 + 8 + 24
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch od := fd.ContainingOneof(); {
		case od != nil && !od.IsSynthetic():
			// the oneof's interface, counted once below
		case fd.IsList():
			n += 24
		case fd.IsMap():
			n += 8
		default:
			n += slotSize(fd)
		}
	}
	oneofs := md.Oneofs()
	for i := range oneofs.Len() {
		if !oneofs.Get(i).IsSynthetic() {
			n += 16
		}
	}
	return allocSize(n)
}

// allocSize is n rounded up as Go's allocator would, roughly: to 16
// bytes, and an eighth more beyond 256.
func allocSize(n int) int {
	if n > 256 {
		n += n / 8
	}
	if n > math.MaxInt-16 {
		return n
	}
	return (n + 15) &^ 15
}
