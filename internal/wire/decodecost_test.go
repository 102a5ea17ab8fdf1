package wire

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// retained is the heap that what decode returns holds, measured after
// collections before and after (decoding's garbage is not counted: the
// decoded message is what stays while its handler runs).
func retained(decode func() any) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	m := decode()
	runtime.GC()
	runtime.ReadMemStats(&b)
	runtime.KeepAlive(m)
	if b.HeapAlloc < a.HeapAlloc {
		return 0
	}
	return b.HeapAlloc - a.HeapAlloc
}

// payloadShapes are payloads of the shapes that decode into the most per
// byte, and ordinary ones, each about 1 MiB.
func payloadShapes(t *testing.T) map[string]proto.Message {
	t.Helper()
	const n = 1 << 19
	empties := &structpb.ListValue{Values: make([]*structpb.Value, n/2)}
	numbers := &structpb.ListValue{Values: make([]*structpb.Value, n/11)}
	nulls := &structpb.ListValue{Values: make([]*structpb.Value, n/4)}
	for i := range empties.Values {
		empties.Values[i] = &structpb.Value{}
	}
	for i := range numbers.Values {
		numbers.Values[i] = structpb.NewNumberValue(float64(i))
	}
	for i := range nulls.Values {
		nulls.Values[i] = structpb.NewNullValue()
	}
	fields := map[string]*structpb.Value{}
	for i := range n / 16 {
		fields[strings.Repeat("k", i%8)+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676%26))] = structpb.NewBoolValue(true)
	}
	items := make([]*testpb.VTEcho, n/2)
	for i := range items {
		items[i] = &testpb.VTEcho{}
	}
	small := make([]int64, n)
	for i := range small {
		small[i] = int64(i % 100)
	}
	return map[string]proto.Message{
		"ListValue of empty Values":  empties,
		"ListValue of null Values":   nulls,
		"ListValue of numbers":       numbers,
		"Struct of bools":            &structpb.Struct{Fields: fields},
		"VTRecord of empty items":    &testpb.VTRecord{Items: items},
		"Numbers of 1-byte varints":  &testpb.Numbers{Values: small},
		"Echo of one string":         &testpb.Echo{Text: strings.Repeat("x", n)},
		"Blob":                       &testpb.Blob{Data: bytes.Repeat([]byte{1}, n)},
		"VTRecord with some of each": &testpb.VTRecord{Name: "r", Values: small[:n/16], Items: items[:n/64], Blob: &testpb.VTBlob{Data: make([]byte, n/2)}},
	}
}

// TestTheDecodeEstimateBoundsWhatDecodingAllocates: for each shape, what
// the decoded message holds is at most the estimate (the walk's, as a payload
// whose type could pass DecodeFactor gets), and the estimate is no more
// than three times it. Payloads within the factor decode; the others are
// refused before decoding.
func TestTheDecodeEstimateBoundsWhatDecodingAllocates(t *testing.T) {
	types := fuzzTypes()
	var c Codecs
	for name, m := range payloadShapes(t) {
		b, err := proto.Marshal(m)
		require.NoError(t, err)
		typ := string(m.ProtoReflect().Descriptor().FullName())
		cd, err := c.lookup(types, typ)
		require.NoError(t, err)
		est := cd.cost.root + cd.cost.scan(cd.cost.md, b, 0)
		var got proto.Message
		alloc := retained(func() any { got, err = cd.decode(typ, b); return got })
		require.NoError(t, err)
		require.True(t, proto.Equal(m, got))
		ratio := float64(alloc) / float64(len(b))
		_, refused := cd.cost.estimate(typ, b)
		t.Logf("%-28s %7d bytes (amp %2d): decoded holds %9d (%5.1fx), estimate %9d (%5.1fx); refused: %v", name, len(b), cd.cost.amp, alloc, ratio, est, float64(est)/float64(len(b)), refused != nil)
		require.GreaterOrEqual(t, uint64(est), alloc, "%s: the estimate bounds what decoding allocates", name)
		require.LessOrEqual(t, uint64(est), 3*alloc+4096, "%s: the estimate is not far above it", name)
		if refused != nil {
			require.ErrorIs(t, refused, actor.ErrBadMessage)
			require.Greater(t, est, cd.cost.root+DecodeFactor*len(b))
			_, err := cd.Decode(typ, b)
			require.ErrorIs(t, err, actor.ErrBadMessage, "refused before decoding")
		} else {
			require.LessOrEqual(t, alloc, uint64(cd.cost.root+DecodeFactor*len(b)), "%s: within the factor", name)
		}
	}
}

// TestMostTypesCostNothingPerMessage: a type whose every field decodes
// within DecodeFactor per byte is never walked: its worst case is its
// estimate.
func TestMostTypesCostNothingPerMessage(t *testing.T) {
	types := fuzzTypes()
	var c Codecs
	for _, m := range []proto.Message{&testpb.Echo{}, &testpb.Blob{}, &testpb.Numbers{}, &testpb.VTEcho{}} {
		cd, err := c.lookup(types, string(m.ProtoReflect().Descriptor().FullName()))
		require.NoError(t, err)
		require.LessOrEqual(t, cd.cost.amp, DecodeFactor, "%T", m)
	}
	for _, m := range []proto.Message{&structpb.ListValue{}, &structpb.Struct{}, &testpb.VTRecord{}} {
		cd, err := c.lookup(types, string(m.ProtoReflect().Descriptor().FullName()))
		require.NoError(t, err)
		require.Greater(t, cd.cost.amp, DecodeFactor, "%T", m)
	}
}
