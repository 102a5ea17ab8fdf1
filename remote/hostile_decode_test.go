package remote

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Decoded-size amplification (issue 23, attack 4): a ListValue of empty
// Values is 2 bytes per Value on the wire and 72 decoded.

// listOf is a ListValue of n values made by mk, encoded.
func listOf(t *testing.T, n int, mk func(i int) *structpb.Value) []byte {
	t.Helper()
	l := &structpb.ListValue{Values: make([]*structpb.Value, n)}
	for i := range l.Values {
		l.Values[i] = mk(i)
	}
	b, err := proto.Marshal(l)
	require.NoError(t, err)
	return b
}

// TestPayloadsAreAdmittedAtWhatTheyDecodeInto: calls of 1 MiB ListValues
// to a function that holds them, MaxInflightBytesPerPeer 8 MiB. Of empty
// Values (36 times their size decoded): every one is refused bad_message
// before it is decoded, and nothing is held. Of numbers (about 7 times):
// they run, charged at what they decode into, so the decoded calls held
// stay within the bound. A legitimate peer is served meanwhile. Before:
// admission counted encoded bytes, so 8 calls of empty Values ran at
// once, holding 36 times the bound.
func TestPayloadsAreAdmittedAtWhatTheyDecodeInto(t *testing.T) {
	const bound = 8 << 20
	// The raw peers answer no heartbeat: a window of ten minutes keeps a loaded
	// machine's slow refusals (20 s under -race alone, over 60 s beside the whole suite) from closing them as
	// silent, which is not what this test is about.
	sys, victim, _ := startNode(t, "victim", Config{Liveness: Liveness{HeartbeatMisses: 600}, Limits: Limits{MaxInflightBytesPerPeer: bound}})
	require.NoError(t, sys.RegisterTypes(&structpb.ListValue{}))
	var release atomic.Pointer[chan struct{}] // the current case's
	var running atomic.Int64
	require.NoError(t, sys.Register("hold", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		running.Add(1)
		defer running.Add(-1)
		select {
		case <-*release.Load():
		case <-ctx.Done():
		}
		return arg, nil
	}))
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	lg := startLegit(t, good, "victim")
	typ := string((&structpb.ListValue{}).ProtoReflect().Descriptor().FullName())

	for _, c := range []struct {
		name    string
		payload []byte
		refused bool
		// calls: the refused case needs no more than the bound in
		// flight, and each refusal decodes half a million Values (over
		// 300 s for 32 of them with -race beside four other suites);
		// the admitted case needs far more than the bound, for pushback.
		calls int
	}{
		{"empty Values", listOf(t, 1<<19, func(int) *structpb.Value { return &structpb.Value{} }), true, 12},
		{"numbers", listOf(t, 1<<20/11, func(i int) *structpb.Value { return structpb.NewNumberValue(float64(i)) }), false, 32},
	} {
		t.Run(c.name, func(t *testing.T) {
			rel := make(chan struct{})
			release.Store(&rel)
			base := heapNow()
			conn := rawLink(t, victim, "raw-"+strings.ReplaceAll(c.name, " ", "-"), 79, 0)
			e := rawEndsAs(victim, "raw-"+strings.ReplaceAll(c.name, " ", "-"), 79)
			calls := c.calls
			f := startFlood(conn, frames(e, calls, func(i int) *wire.Element {
				return &wire.Element{Kind: wire.KindCall, ID: uint64(i + 1), Fn: "hold", Type: typ, Payload: c.payload}
			}), 2*time.Second)
			var held int64
			if c.refused {
				refusals := 0
				readReplies(t, conn, e, calls, func(el *wire.Element, _ int) {
					require.Equal(t, "bad_message", el.Code, el.Message)
					require.Contains(t, el.Message, "more than 16 times its size")
					refusals++
				})
				held = heapNow() - base
				t.Logf("%d calls of %d bytes of %s: %d refused, %d running; heap+stacks %+.1f MiB", calls, len(c.payload), c.name, refusals, running.Load(), float64(held)/(1<<20))
				require.Zero(t, running.Load())
			} else {
				waitFor(t, "a call running, the rest waiting for admission", func() bool { return running.Load() >= 1 && f.pushback.Load() })
				held = heapNow() - base
				t.Logf("%d calls of %d bytes of %s: %d running at once (%d bytes written before the node stopped reading); heap+stacks %+.1f MiB", calls, len(c.payload), c.name, running.Load(), f.written.Load(), float64(held)/(1<<20))
			}
			require.Less(t, held, int64(bound+16<<20), "held: the bound on what admitted payloads decode into, and the buffers of the frames waiting")
			fresh, _ := freshHandshakes(t, victim, "127.0.0.1", 20, "fresh-"+strings.ReplaceAll(c.name, " ", "-"))
			t.Logf("new handshakes meanwhile: %d of 20", fresh)
			require.GreaterOrEqual(t, fresh, 19)
			conn.Close()
			close(rel)
			waitFor(t, "nothing running", func() bool { return running.Load() == 0 })
		})
	}
	calls, p99, worst := lg.check(t)
	t.Logf("legitimate peer: %d calls, p99 %v, worst %v", calls, p99, worst)
}
