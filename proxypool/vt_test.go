package proxypool

import (
	"context"
	"sync"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// inbox records the protobuf messages it gets, in order.
type inbox struct {
	mu  sync.Mutex
	got []proto.Message
}

func (b *inbox) Receive(c *actor.Context) {
	if m, ok := c.Message().(proto.Message); ok {
		b.mu.Lock()
		b.got = append(b.got, m)
		b.mu.Unlock()
	}
}

func (b *inbox) snapshot() []proto.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]proto.Message(nil), b.got...)
}

// TestVTAndPlainMessagesMixOverALinkBothWays: types with vtprotobuf's
// methods (encoded and decoded with them) and plain ones travel side by
// side, in order and intact, as sends, call arguments and replies, in
// both directions, pooled and native.
func TestVTAndPlainMessagesMixOverALinkBothWays(t *testing.T) {
	for _, pooled := range []bool{true, false} {
		name := "native"
		if pooled {
			name = "pooled"
		}
		t.Run(name, func(t *testing.T) {
			a, b := pair(t, nil, 2, Config{ManualConnect: true})
			if pooled {
				require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
				require.NoError(t, b.pool.StartConnection(ctxT(t), "a"))
				waitStatus(t, a.pool, "b", Connected)
				waitStatus(t, b.pool, "a", Connected)
			}
			for _, n := range []*tnode{a, b} {
				require.NoError(t, n.sys.RegisterTypes(&testpb.VTEcho{}, &testpb.VTBlob{}, &testpb.VTRecord{}))
				// vt argument, vt reply; plain argument, vt reply; vt argument, plain reply.
				require.NoError(t, n.sys.Register("record", func(_ context.Context, arg proto.Message) (proto.Message, error) {
					switch m := arg.(type) {
					case *testpb.VTEcho:
						return &testpb.VTRecord{Name: m.Text, Values: []int64{m.N}, Items: []*testpb.VTEcho{m}}, nil
					case *testpb.Echo:
						return &testpb.VTRecord{Name: m.Text, Values: []int64{m.N}}, nil
					}
					return nil, actor.Reject("bad_arg", "want an echo")
				}))
				require.NoError(t, n.sys.Register("plain", func(_ context.Context, arg proto.Message) (proto.Message, error) {
					r := arg.(*testpb.VTRecord)
					return &testpb.Echo{Text: r.Name, N: int64(len(r.Values))}, nil
				}))
			}
			for _, dir := range []struct{ from, to *tnode }{{a, b}, {b, a}} {
				peer := dir.to.sys.Name()
				box := &inbox{}
				_, err := dir.to.sys.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return box }), "inbox")
				require.NoError(t, err)
				var want []proto.Message
				h := dir.from.sys.NewSender()
				for i := range int64(300) {
					var m proto.Message
					switch i % 3 {
					case 0:
						m = &testpb.VTEcho{Text: "vt", N: i, From: dir.from.sys.Name()}
					case 1:
						m = &testpb.Echo{Text: "plain", N: i}
					default:
						m = &testpb.VTRecord{Name: "rec", Values: []int64{i, -i}, Blob: &testpb.VTBlob{Data: []byte{byte(i)}}}
					}
					want = append(want, m)
					h.SendNamed(peer, "inbox", m)
				}
				eventually(t, "every send delivered", func() bool { return len(box.snapshot()) == len(want) })
				for i, got := range box.snapshot() {
					require.True(t, proto.Equal(want[i], got), "message %d: %v != %v", i, want[i], got)
				}
				dir.to.sys.StopActor(mustLookup(t, dir.to.sys, "inbox"))

				v, err := dir.from.sys.Call(ctxT(t), peer, "record", &testpb.VTEcho{Text: "r", N: 7})
				require.NoError(t, err)
				require.True(t, proto.Equal(&testpb.VTRecord{Name: "r", Values: []int64{7}, Items: []*testpb.VTEcho{{Text: "r", N: 7}}}, v))
				v, err = dir.from.sys.Call(ctxT(t), peer, "record", &testpb.Echo{Text: "p", N: 3})
				require.NoError(t, err)
				require.True(t, proto.Equal(&testpb.VTRecord{Name: "p", Values: []int64{3}}, v))
				v, err = dir.from.sys.Call(ctxT(t), peer, "plain", &testpb.VTRecord{Name: "q", Values: []int64{1, 2}})
				require.NoError(t, err)
				require.True(t, proto.Equal(&testpb.Echo{Text: "q", N: 2}, v))
			}
			if pooled {
				require.NotZero(t, a.pool.Stats("b").Messages)
				require.NotZero(t, b.pool.Stats("a").Messages)
			} else {
				require.Zero(t, a.n.Stats().SendsPooled)
				require.Zero(t, a.n.Stats().CallsPooled)
			}
		})
	}
}

func mustLookup(t *testing.T, sys *actor.System, name string) actor.PID {
	t.Helper()
	pid, ok := sys.Lookup(name)
	require.True(t, ok, name)
	return pid
}
