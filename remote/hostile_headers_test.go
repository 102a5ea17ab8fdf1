package remote

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// headered is a headered body of count headers, pairs their keys and
// values, around the wrapped kind and body (SPEC.md, "headered").
func headered(count uint64, pairs []string, k wire.Kind, body []byte) []byte {
	b := wire.AppendUvarint(nil, count)
	for _, s := range pairs {
		b = wire.AppendString(b, s)
	}
	return append(append(b, byte(k)), body...)
}

// TestHostileHeadersCloseOnlyThatLink: headers past their bounds (count,
// bytes, a count the frame could not hold), a malformed key or a wrapped
// kind that cannot carry headers close the link that sent them, logged
// and counted, and the node keeps serving its other links. Every bound
// is checked before the headers are copied.
func TestHostileHeadersCloseOnlyThatLink(t *testing.T) {
	_, victim, logs := startNode(t, "victim", Config{Limits: Limits{MaxFrameSize: 1 << 20}})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(t.Context(), "victim", victim.Addr()))
	healthy(t, good, "victim")

	frame := func(kind wire.Kind, body []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(body)+1))
		return append(append(b, byte(kind)), body...)
	}
	many := make([]string, 0, 2*(actor.MaxHeaders+1))
	for i := 0; i <= actor.MaxHeaders; i++ {
		many = append(many, "k"+strings.Repeat("x", i), "v")
	}
	big := strings.Repeat("v", actor.MaxHeaderBytes)
	entry := headered(1, []string{"k", big}, wire.KindCast, castBody)
	batch := append([]byte{1, byte(wire.KindHeadered)}, binary.BigEndian.AppendUint32(nil, uint32(len(entry)))...)
	cases := []struct {
		name   string
		bytes  []byte
		reason string
	}{
		{"one header more than the bound", frame(wire.KindHeadered, headered(uint64(len(many)/2), many, wire.KindCast, castBody)), "33 headers exceed 32"},
		{"a count of 2^40", frame(wire.KindHeadered, headered(1<<40, []string{"k", "v"}, wire.KindCast, castBody)), "1099511627776 headers exceed 32"},
		{"one byte more than the bound", frame(wire.KindHeadered, headered(1, []string{"k", big}, wire.KindCast, castBody)), "headers exceed 4096 bytes"},
		{"an empty key", frame(wire.KindHeadered, headered(1, []string{"", "v"}, wire.KindCast, castBody)), "header with an empty key"},
		{"a key twice", frame(wire.KindHeadered, headered(2, []string{"k", "1", "k", "2"}, wire.KindCast, castBody)), "header key repeated"},
		{"headers on a reply", frame(wire.KindHeadered, headered(1, []string{"k", "v"}, wire.KindReply, []byte{1, 0, 0, 0})), "headered frame wraps reply"},
		{"headers inside headers", frame(wire.KindHeadered, headered(1, []string{"k", "v"}, wire.KindHeadered, headered(1, []string{"k", "v"}, wire.KindCast, castBody))), "headered frame wraps headered"},
		{"a batch entry over the bound", frame(wire.KindBatch, append(batch, entry...)), "headers exceed 4096 bytes"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := rawPeer(t, victim, testCookie)
			_, err := conn.Write(c.bytes)
			require.NoError(t, err)
			assertClosedByPeer(t, conn)
			waitFor(t, "reason logged", func() bool { return strings.Contains(logs.String(), c.reason) })
			require.GreaterOrEqual(t, victim.Stats().BadFrames, uint64(i+1))
			healthy(t, good, "victim")
		})
	}
}

// A node refuses to send headers its peer would close the link on: the
// caller gets bad_message, not executed, and the link stays up.
func TestHeadersOverTheBoundAreNotSent(t *testing.T) {
	_, victim, _ := startNode(t, "victim", Config{})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(t.Context(), "victim", victim.Addr()))
	healthy(t, good, "victim")
	ctx := actor.WithHeader(t.Context(), "k", strings.Repeat("v", actor.MaxHeaderBytes))
	_, err := good.Call(ctx, "victim", "echo", &testpb.Echo{Text: "x"})
	require.ErrorIs(t, err, actor.ErrBadMessage)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	healthy(t, good, "victim")
}
