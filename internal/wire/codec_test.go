package wire

import (
	"strconv"
	"testing"

	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// countingVT is a VTEcho whose vtprotobuf methods count their calls.
type countingVT struct {
	*testpb.VTEcho
	sized, marshalled int
}

func (c *countingVT) SizeVT() int { c.sized++; return c.VTEcho.SizeVT() }

func (c *countingVT) MarshalToSizedBufferVT(b []byte) (int, error) {
	c.marshalled++
	return c.VTEcho.MarshalToSizedBufferVT(b)
}

func TestPayloadsWithVTMethodsEncodeWithThem(t *testing.T) {
	m := &countingVT{VTEcho: &testpb.VTEcho{Text: "fast", N: 42, From: "a"}}
	typ, pm, err := PayloadOf(m)
	require.NoError(t, err)
	require.Equal(t, "mailroom.testpb.VTEcho", typ)
	b, err := fuzzEnds.EncodeElement(nil, &Element{Kind: KindSend, ToName: "x", Type: typ, Msg: pm})
	require.NoError(t, err)
	require.Equal(t, 1, m.sized)
	require.Equal(t, 1, m.marshalled)

	// The bytes are protobuf's: the standard decoder reads them, and
	// protobuf's own encoding of the same message is the same payload.
	var el Element
	require.NoError(t, fuzzEnds.DecodeBody(KindSend, b[5:], &el))
	var got testpb.VTEcho
	require.NoError(t, proto.Unmarshal(el.Payload, &got))
	require.True(t, proto.Equal(m.VTEcho, &got))
	std, err := proto.MarshalOptions{Deterministic: true}.Marshal(m.VTEcho)
	require.NoError(t, err)
	require.Equal(t, std, el.Payload)
}

func TestCodecsDecodeVTTypesWithUnmarshalVT(t *testing.T) {
	types := new(protoregistry.Types)
	for _, m := range []proto.Message{&testpb.VTEcho{}, &testpb.VTRecord{}, &testpb.Echo{}, &structpb.Value{}} {
		require.NoError(t, types.RegisterMessage(m.ProtoReflect().Type()))
	}
	var c Codecs
	for typ, vt := range map[string]bool{
		"mailroom.testpb.VTEcho":   true,
		"mailroom.testpb.VTRecord": true,
		"mailroom.testpb.Echo":     false, // no vtprotobuf methods
		"google.protobuf.Value":    false,
	} {
		cd, err := c.lookup(types, typ)
		require.NoError(t, err)
		require.Equal(t, vt, cd.vt, typ)
	}
	_, err := c.lookup(types, "made.Up")
	require.Error(t, err)
	require.Len(t, *c.m.Load(), 4, "only registered types are cached")

	rec := &testpb.VTRecord{Name: "r", Values: []int64{1, -2, 3 << 40}, Items: []*testpb.VTEcho{{Text: "x", N: 1}, {From: "y"}}, Blob: &testpb.VTBlob{Data: []byte{0, 1, 2}}}
	b, err := proto.Marshal(rec)
	require.NoError(t, err)
	got, err := c.Unmarshal(types, "mailroom.testpb.VTRecord", b)
	require.NoError(t, err)
	require.True(t, proto.Equal(rec, got))
	_, err = c.Unmarshal(types, "mailroom.testpb.VTRecord", []byte{0x0a, 0x7f})
	require.Error(t, err, "a truncated payload is refused")
}

func TestNestsFindsCyclesOfTypes(t *testing.T) {
	require.False(t, nests((&testpb.VTRecord{}).ProtoReflect().Descriptor()))
	require.False(t, nests((&testpb.Echo{}).ProtoReflect().Descriptor()))
	require.True(t, nests((&structpb.Value{}).ProtoReflect().Descriptor()), "Value holds a Struct of Values")
	require.True(t, nests((&structpb.Struct{}).ProtoReflect().Descriptor()), "through a map")
	require.True(t, nests((&descriptorpb.FileDescriptorProto{}).ProtoReflect().Descriptor()), "a message type holds nested message types")
}

// TestTheInternerIsBoundedAgainstAPeerInventingNames: a peer chooses the
// names a link's reader interns; past the bound they are plain strings.
func TestTheInternerIsBoundedAgainstAPeerInventingNames(t *testing.T) {
	var in Interner
	for i := range 5 * internMax {
		name := strconv.Itoa(i) + string(make([]byte, 100))
		require.Equal(t, name, in.get([]byte(name)))
	}
	require.LessOrEqual(t, len(in.m), internMax)
	require.LessOrEqual(t, in.bytes, internMaxBytes)
	// A name seen before the bound is still the same string.
	first := in.get([]byte("0" + string(make([]byte, 100))))
	require.Equal(t, "0"+string(make([]byte, 100)), first)
}
