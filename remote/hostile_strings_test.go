package remote

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Attacks with the strings a peer chooses (issue 23, attacks 2 and 4):
// target, function and type names reach span names, span attributes and
// error texts.

// tracedEl is el carrying a valid trace context.
func tracedEl(el *wire.Element) *wire.Element {
	el.Trace = wire.Trace{ID: trace.TraceID(traceID), Span: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, Flags: 1}
	return el
}

// spanNames are the names of the spans rec ended, and whether any has
// the attribute key.
func spanNames(rec *tracetest.SpanRecorder, key string) (names map[string]int, hasKey bool) {
	names = map[string]int{}
	for _, s := range rec.Ended() {
		names[s.Name()]++
		for _, a := range s.Attributes() {
			if string(a.Key) == key {
				hasKey = true
			}
		}
	}
	return names, hasKey
}

// TestPeerChosenNamesDoNotReachSpans: with a TracerProvider, traced
// sends from a cookie holder to target names it made up. A 4 MiB name
// closes the link before any span is made; 200 sends to a made-up name
// that fits make spans of one fixed name, without the name; a send to a
// registered name is named after it. Heap and stacks grow by less than
// 16 MiB while the spans are held, and a legitimate peer is served.
// Before: the span name and the mailroom.name attribute were the peer's
// target name, whatever its size, for targets that did not exist.
func TestPeerChosenNamesDoNotReachSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	sys, victim, logs := startNode(t, "victim", Config{TracerProvider: tp})
	_, err := sys.SpawnNamed(actor.PropsFromFunc(func(*actor.Context) {}), "known")
	require.NoError(t, err)
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	lg := startLegit(t, good, "victim")
	typ, payload, err := marshal(&testpb.Echo{Text: "x"})
	require.NoError(t, err)
	e := rawEnds(victim)
	base := heapNow()

	// 50 sends to a 4 MiB name, made before the link (which would be
	// silent meanwhile).
	one := e.AppendFrame(nil, tracedEl(&wire.Element{Kind: wire.KindSend, ToName: strings.Repeat("n", 4<<20), Type: typ, Payload: payload}))
	sends := bytes.Repeat(one, 50)
	conn := rawPeer(t, victim, testCookie)
	f := startFlood(conn, sends, 5*time.Second)
	f.wait(t)
	held := heapNow() - base
	names, _ := spanNames(rec, "mailroom.name")
	t.Logf("50 traced sends to a 4 MiB name: %d bytes written, %d spans, heap+stacks %+.1f MiB held", f.written.Load(), len(rec.Ended()), float64(held)/(1<<20))
	waitFor(t, "the link closed on the name", func() bool { return strings.Contains(logs.String(), "exceeds 1024") })
	require.Empty(t, names, "no span for a frame whose name is over the bound")

	// 200 sends to a made-up name that fits, and one to a registered one.
	made := strings.Repeat("m", wire.MaxNameLen)
	conn = rawLink(t, victim, "raw2", 78, 0)
	e2 := rawEndsAs(victim, "raw2", 78)
	b := frames(e2, 200, func(int) *wire.Element {
		return tracedEl(&wire.Element{Kind: wire.KindSend, ToName: made, Type: typ, Payload: payload})
	})
	b = e2.AppendFrame(b, tracedEl(&wire.Element{Kind: wire.KindSend, ToName: "known", Type: typ, Payload: payload}))
	_, err = conn.Write(b)
	require.NoError(t, err)
	waitFor(t, "201 spans", func() bool { return len(rec.Ended()) == 201 })
	held = heapNow() - base
	names, _ = spanNames(rec, "mailroom.name")
	t.Logf("then 200 traced sends to a made-up name of %d bytes and one to a registered one: spans %v, heap+stacks %+.1f MiB held", len(made), names, float64(held)/(1<<20))
	require.Equal(t, map[string]int{"mailroom.send (unknown target)": 200, "mailroom.send known": 1}, names)
	for _, s := range rec.Ended() {
		for _, a := range s.Attributes() {
			require.NotContains(t, a.Value.String(), made, "attribute %s", a.Key)
		}
	}
	require.Less(t, held, int64(16<<20), "heap and stacks held with the spans")
	fresh, _ := freshHandshakes(t, victim, "127.0.0.1", 20, "fresh")
	calls, p99, worst := lg.check(t)
	t.Logf("legitimate peer: %d calls, p99 %v, worst %v; new handshakes %d of 20", calls, p99, worst, fresh)
	require.GreaterOrEqual(t, fresh, 19)
}

// TestAnErrorReplyIsSmallWhateverTheNameItAnswers: calls naming an
// unregistered type, the kind of name that was quoted whole into the
// error reply. A 15 MiB type name closes the link (a name over
// wire.MaxNameLen); 100 calls with a 1 KiB name of bytes that quote four
// times their size each get a reply of less than 1 KiB. Before: a 15 MiB
// name came back as a 63 MB reply, let into the link's empty buffer
// whatever its size.
func TestAnErrorReplyIsSmallWhateverTheNameItAnswers(t *testing.T) {
	_, victim, logs := startNode(t, "victim", Config{})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	lg := startLegit(t, good, "victim")
	e := rawEnds(victim)

	conn := rawPeer(t, victim, testCookie)
	_, err := conn.Write(e.AppendFrame(nil, &wire.Element{Kind: wire.KindCall, ID: 1, Fn: "echo", Type: strings.Repeat("\xff", 15<<20), Payload: []byte{1}}))
	require.NoError(t, err)
	// What comes back: an error reply (before), or the end of the link.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	fr := wire.NewFrameReader(conn, 1<<30)
	replyBytes := 0
	for {
		k, body, err := fr.Next()
		if err != nil {
			break
		}
		if k == wire.KindReply {
			replyBytes = len(body)
			break
		}
	}
	t.Logf("a call naming a 15 MiB type: a reply of %d bytes", replyBytes)
	require.Zero(t, replyBytes, "no reply: the name closes the link")
	waitFor(t, "the link closed on the name", func() bool { return strings.Contains(logs.String(), "type of 15728640 bytes exceeds 1024") })

	conn = rawLink(t, victim, "raw2", 78, 0)
	e2 := rawEndsAs(victim, "raw2", 78)
	name := strings.Repeat("\xff", wire.MaxNameLen)
	_, err = conn.Write(frames(e2, 100, func(i int) *wire.Element {
		return &wire.Element{Kind: wire.KindCall, ID: uint64(i + 1), Fn: "echo", Type: name, Payload: []byte{1}}
	}))
	require.NoError(t, err)
	largest := 0
	readReplies(t, conn, e2, 100, func(el *wire.Element, size int) {
		require.Equal(t, "bad_message", el.Code)
		largest = max(largest, size)
	})
	t.Logf("100 calls naming an unregistered type of %d bytes of 0xff: the largest reply %d bytes", len(name), largest)
	require.Less(t, largest, 1<<10)
	fresh, _ := freshHandshakes(t, victim, "127.0.0.1", 20, "fresh")
	calls, p99, worst := lg.check(t)
	t.Logf("legitimate peer: %d calls, p99 %v, worst %v; new handshakes %d of 20", calls, p99, worst, fresh)
	require.GreaterOrEqual(t, fresh, 19)
}
