package wire

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The fast codec. Message types generated with vtprotobuf
// (github.com/planetscale/vtprotobuf, protoc-gen-go-vtproto with the
// features marshal+unmarshal+size) have methods that encode and decode
// without reflection. When a type has them the remote layer uses them on
// both sides: its sender encodes straight into the frame with SizeVT and
// MarshalToSizedBufferVT, its receiver decodes into a fresh message of
// the registered type with UnmarshalVT. Other types use protobuf's own
// codec; both produce the same wire bytes, so a node of either kind
// reads the other, and vt and non-vt types mix freely.

// vtMarshaler is what vtprotobuf generates for the marshal and size
// features.
type vtMarshaler interface {
	SizeVT() int
	MarshalToSizedBufferVT(dAtA []byte) (int, error)
}

// vtUnmarshaler is what vtprotobuf generates for the unmarshal feature.
type vtUnmarshaler interface {
	UnmarshalVT(dAtA []byte) error
}

// appendVT encodes m, which has vtprotobuf's methods, length first, in
// place at the end of dst.
func appendVT(dst []byte, m vtMarshaler, typ string) ([]byte, error) {
	mark := len(dst)
	size := m.SizeVT()
	dst = AppendUvarint(dst, uint64(size))
	start := len(dst)
	dst = slices.Grow(dst, size)[:start+size]
	n, err := m.MarshalToSizedBufferVT(dst[start:])
	switch {
	case err != nil:
		return dst[:mark], fmt.Errorf("%w: marshal %s: %v", actor.ErrBadMessage, typ, err)
	case n != size:
		return dst[:mark], fmt.Errorf("%w: marshal %s: its size changed while it was encoded (was it modified concurrently?)", actor.ErrBadMessage, typ)
	}
	return dst, nil
}

// Codec is how a node decodes one message type.
type Codec struct {
	mt   protoreflect.MessageType
	cost *decodeCost // what its payloads decode into (decodecost.go)
	// vt: decode with UnmarshalVT. Not for a type that can nest itself
	// (directly or through others): a peer could nest it as deep as a
	// frame allows, and vtprotobuf's decoder, unlike protobuf's, has no
	// depth limit.
	vt bool
}

// Codecs caches a node's codecs by full name. Only registered types are
// cached (a name a peer made up is looked up, refused and forgotten), so
// it is bounded by what the node registered.
type Codecs struct {
	// Node is the node whose registry it reads, named in errors.
	Node string
	mu   sync.Mutex // serialises writers of m
	m    atomic.Pointer[map[string]*Codec]
}

func (c *Codecs) lookup(types actor.TypeRegistry, typ string) (*Codec, error) {
	if m := c.m.Load(); m != nil {
		if cd := (*m)[typ]; cd != nil {
			return cd, nil
		}
	}
	mt, err := types.FindMessageByName(protoreflect.FullName(typ))
	if err != nil {
		where := "this node"
		if c.Node != "" {
			where = "node " + c.Node
		}
		return nil, fmt.Errorf("%w: unregistered message type %s on %s (register it with System.RegisterTypes on %s)", actor.ErrBadMessage, quoteName(typ), where, where)
	}
	_, vt := mt.Zero().Interface().(vtUnmarshaler)
	cd := &Codec{mt: mt, vt: vt && !nests(mt.Descriptor()), cost: newDecodeCost(mt.Descriptor())}
	c.mu.Lock()
	defer c.mu.Unlock()
	next := map[string]*Codec{typ: cd}
	if cur := c.m.Load(); cur != nil {
		for k, v := range *cur {
			next[k] = v
		}
	}
	c.m.Store(&next)
	return cd, nil
}

// quoteName is a name a peer sent, for an error text: quoted, at most
// its first 128 bytes.
func quoteName(s string) string {
	if len(s) <= 128 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:128], len(s))
}

// Cached is the codec cached for typ, or nil.
func (c *Codecs) Cached(typ string) *Codec {
	if m := c.m.Load(); m != nil {
		return (*m)[typ]
	}
	return nil
}

// Unmarshal decodes a payload of type typ into a fresh message.
func (c *Codecs) Unmarshal(types actor.TypeRegistry, typ string, b []byte) (proto.Message, error) {
	if typ == "" {
		if len(b) != 0 {
			return nil, fmt.Errorf("%w: %d payload bytes without a type", actor.ErrBadMessage, len(b))
		}
		return nil, nil
	}
	cd, err := c.lookup(types, typ)
	if err != nil {
		return nil, err
	}
	return cd.Decode(typ, b)
}

// Cost is what a payload b of type typ decodes into (an estimate from
// its schema, decodecost.go), for admission; an error (wrapping
// actor.ErrBadMessage: refused, not decoded) when that is more than
// DecodeFactor times its size. No payload, no cost.
func (c *Codecs) Cost(types actor.TypeRegistry, typ string, b []byte) (int, error) {
	if typ == "" {
		return 0, nil
	}
	cd, err := c.lookup(types, typ)
	if err != nil {
		return 0, err
	}
	return cd.cost.estimate(typ, b)
}

// Decode decodes b into a fresh message of cd's type (typ names it),
// unless it would decode into more than DecodeFactor times its size.
func (cd *Codec) Decode(typ string, b []byte) (proto.Message, error) {
	if _, err := cd.cost.estimate(typ, b); err != nil {
		return nil, err
	}
	return cd.decode(typ, b)
}

// decode is Decode without the check.
func (cd *Codec) decode(typ string, b []byte) (proto.Message, error) {
	m := cd.mt.New().Interface()
	var err error
	if cd.vt {
		err = m.(vtUnmarshaler).UnmarshalVT(b)
	} else {
		// Merge: the message is fresh, there is nothing to reset.
		err = proto.UnmarshalOptions{Merge: true}.Unmarshal(b, m)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: decode %s: %v", actor.ErrBadMessage, typ, err)
	}
	return m, nil
}

// nests reports whether a message of type md can contain messages in a
// cycle of types (a type that contains itself, directly or not), i.e.
// nest without a bound set by the schema.
func nests(md protoreflect.MessageDescriptor) bool {
	const (
		visiting = 1
		done     = 2
	)
	state := map[protoreflect.FullName]int{}
	var walk func(m protoreflect.MessageDescriptor) bool
	walk = func(m protoreflect.MessageDescriptor) bool {
		state[m.FullName()] = visiting
		fields := m.Fields()
		for i := range fields.Len() {
			f := fields.Get(i)
			sub := f.Message()
			if f.IsMap() {
				sub = f.MapValue().Message()
			}
			if sub == nil {
				continue
			}
			switch state[sub.FullName()] {
			case visiting:
				return true
			case done:
				continue
			}
			if walk(sub) {
				return true
			}
		}
		state[m.FullName()] = done
		return false
	}
	return walk(md)
}
