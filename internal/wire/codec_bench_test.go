package wire

// The fast codec against protobuf's, on the same messages and bytes:
// encoding into a frame (appendPayload) and decoding into a fresh message.
//
//	go test -run '^$' -bench PayloadCodec -count 6 ./remote | tee codec.txt
//	benchstat -col /codec codec.txt

import (
	"strings"
	"testing"

	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// plainOnly hides a message's vtprotobuf methods: protobuf's codec only.
type plainOnly struct{ proto.Message }

func BenchmarkPayloadCodec(b *testing.B) {
	types := new(protoregistry.Types)
	for _, m := range []proto.Message{&testpb.VTEcho{}, &testpb.VTBlob{}, &testpb.VTRecord{}} {
		if err := types.RegisterMessage(m.ProtoReflect().Type()); err != nil {
			b.Fatal(err)
		}
	}
	items := make([]*testpb.VTEcho, 3)
	for i := range items {
		items[i] = &testpb.VTEcho{Text: strings.Repeat("r", 20), N: int64(i) << 33, From: "node-a"}
	}
	msgs := []struct {
		name string
		msg  proto.Message
	}{
		{"bytes", &testpb.VTBlob{Data: make([]byte, 200)}},
		{"echo", &testpb.VTEcho{Text: strings.Repeat("x", 180), N: 1 << 40, From: "a"}},
		{"record", &testpb.VTRecord{Name: "record", Values: []int64{1, 1 << 20, -3, 1 << 40, 5, 6, 7, 8}, Items: items, Blob: &testpb.VTBlob{Data: make([]byte, 64)}}},
	}
	for _, m := range msgs {
		typ := string(m.msg.ProtoReflect().Descriptor().FullName())
		for _, codecName := range []string{"proto", "vt"} {
			b.Run("msg="+m.name+"/codec="+codecName, func(b *testing.B) {
				var c Codecs
				cd, err := c.lookup(types, typ)
				if err != nil {
					b.Fatal(err)
				}
				el := &Element{Type: typ, Msg: m.msg}
				if codecName == "proto" {
					el.Msg = plainOnly{m.msg}
					cd.vt = false
				}
				var buf []byte
				b.ReportAllocs()
				for b.Loop() {
					buf, err = appendPayload(buf[:0], el)
					if err != nil {
						b.Fatal(err)
					}
					d := Dec{B: buf}
					d.Str("type")
					if _, err := c.Unmarshal(types, typ, d.bytes("payload")); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
