package wire

// Fuzz the whole inbound envelope, as a link's reader and the receiver
// pool see it: frames (single or batch), then each element's protobuf
// payload through a type registry, then the reply and terminated statuses
// turned back into caller errors.
//
//	go test -run '^$' -fuzz '^FuzzEnvelope$' -fuzztime 10m ./remote
//
// The corpus is in testdata/fuzz/FuzzEnvelope.

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// fuzzTypes is the registry the fuzzed payloads decode through: the test
// messages, those with vtprotobuf's methods (decoded by UnmarshalVT), and
// structpb's recursive ones (deep nesting, maps, oneofs).
func fuzzTypes() actor.TypeRegistry {
	r := new(protoregistry.Types)
	for _, m := range []proto.Message{
		&testpb.Echo{}, &testpb.Blob{}, &testpb.Numbers{}, &testpb.Sleep{},
		&testpb.VTEcho{}, &testpb.VTBlob{}, &testpb.VTRecord{},
		&structpb.Struct{}, &structpb.Value{}, &structpb.ListValue{},
		&wrapperspb.StringValue{}, &wrapperspb.Int64Value{},
	} {
		if err := r.RegisterMessage(m.ProtoReflect().Type()); err != nil {
			panic(err)
		}
	}
	return r
}

// checkPayload decodes a payload as the inbound path does; a payload that
// decodes must survive a marshal/unmarshal round trip unchanged.
func checkPayload(types actor.TypeRegistry, typ string, b []byte) {
	// The decode estimate walks any bytes (decodecost.go): it must not
	// panic, and a payload refused for what it would decode into is
	// never decoded.
	if cd, err := new(Codecs).lookup(types, typ); err == nil {
		if walked := cd.cost.scan(cd.cost.md, b, 0); walked < 0 {
			panic(fmt.Sprintf("a negative estimate for %s: %d", typ, walked))
		}
		if _, err := cd.cost.estimate(typ, b); err != nil {
			if _, derr := cd.Decode(typ, b); derr == nil {
				panic(fmt.Sprintf("a %s refused by its estimate decoded", typ))
			}
			return
		}
	}
	m, err := unmarshal(types, typ, b)
	if err != nil || m == nil {
		return
	}
	opts := proto.MarshalOptions{Deterministic: true}
	b1, err := opts.Marshal(m)
	if _, vt := m.(vtUnmarshaler); vt && err != nil && proto.Unmarshal(b, m.ProtoReflect().New().Interface()) != nil {
		return // vtprotobuf's decoder takes strings protobuf's refuses (not UTF-8): documented
	}
	if err != nil {
		panic(fmt.Sprintf("a decoded %s does not marshal: %v", typ, err))
	}
	m2, err := unmarshal(types, typ, b1)
	if err != nil {
		panic(fmt.Sprintf("a re-marshalled %s does not decode: %v", typ, err))
	}
	b2, err := opts.Marshal(m2)
	if err != nil || !bytes.Equal(b1, b2) {
		panic(fmt.Sprintf("%s does not round-trip: %x != %x (%v)", typ, b1, b2, err))
	}
}

// checkStatus turns a non-OK status into the caller's error, as a reply
// or a Terminated notification does; the error must classify.
func checkStatus(el *Element) {
	err := ReplyError(el, "call", "b", 2, "f")
	if err == nil || err.Error() == "" {
		panic("a failed reply produced no error")
	}
	switch o := actor.Outcome(err); o {
	case actor.Executed, actor.NotExecuted, actor.MayHaveExecuted:
	default:
		panic(fmt.Sprintf("unknown outcome %v", o))
	}
	if el.Status == StatusRejected || el.Status == StatusPanic {
		if actor.Outcome(err) != actor.Executed {
			panic("a rejection or panic must classify as executed")
		}
	}
}

// checkElement is the inbound path's treatment of one element.
func checkElement(types actor.TypeRegistry, el *Element) {
	switch el.Kind {
	case KindSend, KindCast, KindCall, KindRequest:
		checkPayload(types, el.Type, el.Payload)
	case KindReply:
		if el.Status == StatusOK {
			checkPayload(types, el.Type, el.Payload)
		} else {
			checkStatus(el)
		}
	case KindControl:
		if c := el.Control; c != nil && c.Op == CtlTerminated && (c.Status != StatusOK || c.Code != "") {
			checkStatus(&Element{Status: c.Status, Code: c.Code, Message: c.Message})
		}
	}
}

// decodeEnvelopes decodes every frame in data and every payload in it.
func decodeEnvelopes(types actor.TypeRegistry, data []byte) {
	fr := NewFrameReader(bytes.NewReader(data), 1<<20)
	for {
		k, body, err := fr.Next()
		if err != nil {
			return
		}
		var el Element
		if k != KindBatch {
			if fuzzEnds.DecodeBody(k, body, &el) == nil {
				checkElement(types, &el)
			}
			continue
		}
		it, err := fuzzEnds.NewBatchIter(body)
		if err != nil {
			continue
		}
		for {
			ok, err := it.Next(&el)
			if err != nil || !ok {
				break
			}
			checkElement(types, &el)
		}
	}
}

// envelopeSeeds are valid frames and batches carrying real payloads of
// every registered type, error replies of every status, and a terminated
// notification.
func envelopeSeeds() [][]byte {
	mustMarshal := func(m proto.Message) (string, []byte) {
		typ, b, err := marshal(m)
		if err != nil {
			panic(err)
		}
		return typ, b
	}
	st, _ := structpb.NewStruct(map[string]any{"a": 1.5, "b": []any{"x", true, nil}, "c": map[string]any{"d": "e"}})
	msgs := []proto.Message{
		&testpb.Echo{Text: "hi", N: 42, From: "a"}, &testpb.Blob{Data: []byte{0, 1, 2, 255}},
		&testpb.Numbers{Values: []int64{-1, 0, 1 << 40}}, &testpb.Sleep{Millis: 5, Tag: "t"},
		st, structpb.NewStringValue("s"), wrapperspb.Int64(-7),
	}
	pid := actor.PID{Node: "b", Incarnation: 2, ID: 7}
	var els []Element
	for i, m := range msgs {
		typ, b := mustMarshal(m)
		els = append(els,
			Element{Kind: KindSend, To: pid, Type: typ, Payload: b},
			Element{Kind: KindCall, ID: uint64(i + 1), Fn: "f", Type: typ, Payload: b},
			Element{Kind: KindReply, ID: uint64(i + 1), Status: StatusOK, Type: typ, Payload: b})
	}
	els = append(els,
		Element{Kind: KindReply, ID: 9, Status: StatusRejected, Code: "limit", Message: "over"},
		Element{Kind: KindReply, ID: 9, Status: StatusPanic, Message: "boom"},
		Element{Kind: KindReply, ID: 9, Status: StatusError, Code: "no_process~may", Message: "died"},
		Element{Kind: KindReply, ID: 9, Status: StatusError, Code: "unheard_of", Message: "?"},
		Element{Kind: KindSend, ToName: "sink", Type: "mailroom.testpb.Unknown", Payload: []byte{10, 1, 'x'}},
		Element{Kind: KindControl, Control: &Control{Op: CtlTerminated, Watcher: pid, Target: pid, Status: StatusError, Code: "node_down~may", Message: "gone"}})
	var out [][]byte
	var batch []byte
	n := 0
	for i := range els {
		out = append(out, fuzzEnds.AppendFrame(nil, &els[i]))
		if els[i].Kind != KindControl {
			batch = fuzzEnds.appendElement(batch, &els[i])
			n++
		}
	}
	b, start := beginFrame(nil, KindBatch)
	b = AppendUvarint(b, uint64(n))
	return append(out, endFrame(append(b, batch...), start))
}

func FuzzEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds() {
		f.Add(s)
	}
	types := fuzzTypes()
	f.Fuzz(func(t *testing.T, data []byte) { decodeEnvelopes(types, data) })
}

func TestEnvelopeSeedsDecode(t *testing.T) {
	types := fuzzTypes()
	for _, s := range envelopeSeeds() {
		decodeEnvelopes(types, s)
		// Every seed is a whole valid frame: its payload decodes.
		k, body, err := NewFrameReader(bytes.NewReader(s), 1<<20).Next()
		if err != nil {
			t.Fatalf("seed does not frame: %v", err)
		}
		if k == KindBatch {
			continue
		}
		var el Element
		if err := fuzzEnds.DecodeBody(k, body, &el); err != nil {
			t.Fatalf("seed %s does not decode: %v", k, err)
		}
		if el.Type != "" && el.Type != "mailroom.testpb.Unknown" {
			if _, err := unmarshal(types, el.Type, el.Payload); err != nil {
				t.Fatalf("seed payload %s does not decode: %v", el.Type, err)
			}
		}
	}
}
