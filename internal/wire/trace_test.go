package wire

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

// tracedEls are one element of every traceable kind, traced.
func tracedEls() []Element {
	pid := actor.PID{Node: "b", Incarnation: 2, ID: 7}
	return []Element{
		{Kind: KindSend, To: pid, Type: "t.M", Payload: []byte{1}, Trace: seedTrace},
		{Kind: KindCast, Fn: "f", Type: "t.M", Trace: seedTrace},
		{Kind: KindCall, ID: 9, Deadline: 5, Fn: "f", Trace: seedTrace},
		{Kind: KindRequest, ID: 10, ToName: "svc", Sender: pid, Trace: seedTrace},
	}
}

func TestTracedFramesRoundTrip(t *testing.T) {
	for _, el := range tracedEls() {
		frame := fuzzEnds.AppendFrame(nil, &el)
		require.Equal(t, KindTraced, Kind(frame[FrameHeader]), "%s", el.Kind)
		var got Element
		require.NoError(t, fuzzEnds.DecodeBody(Kind(frame[FrameHeader]), frame[FrameHeader+1:], &got))
		require.Equal(t, el.Kind, got.Kind)
		require.Equal(t, seedTrace, got.Trace)
		require.Equal(t, el.Fn, got.Fn)
		require.Equal(t, el.ID, got.ID)
		require.Equal(t, el.ToName, got.ToName)
		require.Equal(t, el.Kind, Unwrap(KindTraced, frame[FrameHeader+1:]))

		// The same element untraced is byte for byte what it was before
		// traced frames existed: the traced frame's tail.
		plain := el
		plain.Trace = Trace{}
		untraced := fuzzEnds.AppendFrame(nil, &plain)
		require.Equal(t, el.Kind, Kind(untraced[FrameHeader]))
		require.True(t, bytes.HasSuffix(frame, untraced[FrameHeader+1:]))
	}
}

func TestTracedEntriesInABatch(t *testing.T) {
	els := tracedEls()
	b, start := beginFrame(nil, KindBatch)
	b = AppendUvarint(b, uint64(len(els)+1))
	for i := range els {
		b = fuzzEnds.appendElement(b, &els[i])
	}
	b = fuzzEnds.appendElement(b, &Element{Kind: KindCancel, ID: 3, Trace: seedTrace}) // not traceable: plain
	b = endFrame(b, start)
	it, err := fuzzEnds.NewBatchIter(b[FrameHeader+1:])
	require.NoError(t, err)
	var el Element
	for i := range els {
		ok, err := it.Next(&el)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, els[i].Kind, el.Kind)
		require.Equal(t, seedTrace, el.Trace)
	}
	ok, err := it.Next(&el)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, KindCancel, el.Kind)
	require.True(t, el.Trace.IsZero())
}

// TestMalformedTracedFrames: every way a traced body can be wrong is a
// wire error (the link closes), never a panic nor a large allocation.
func TestMalformedTracedFrames(t *testing.T) {
	good := fuzzEnds.AppendFrame(nil, &Element{Kind: KindCast, Fn: "f", Trace: seedTrace})[FrameHeader+1:]
	head := func(tr Trace, kind Kind) []byte {
		return append(appendTraceHead(nil, &tr), byte(kind))
	}
	castBody := fuzzEnds.AppendFrame(nil, &Element{Kind: KindCast, Fn: "f"})[FrameHeader+1:]
	zeroID := seedTrace
	zeroID.ID = [16]byte{}
	zeroSpan := seedTrace
	zeroSpan.Span = [8]byte{}
	long := seedTrace
	long.State = strings.Repeat("a", MaxTraceState+1)
	cases := map[string][]byte{
		"empty":                        {},
		"short head":                   good[:20],
		"no kind":                      good[:25+1+len(seedTrace.State)],
		"truncated body":               good[:len(good)-1],
		"trailing bytes":               append(append([]byte(nil), good...), 0),
		"zero trace id":                append(head(zeroID, KindCast), castBody...),
		"zero span id":                 append(head(zeroSpan, KindCast), castBody...),
		"long state":                   append(head(long, KindCast), castBody...),
		"nested traced":                append(head(seedTrace, KindTraced), good...),
		"wraps a reply":                append(head(seedTrace, KindReply), 1, 0, 0, 0),
		"wraps a batch":                append(head(seedTrace, KindBatch), 0),
		"unknown kind":                 append(head(seedTrace, 0x7f), castBody...),
		"state too long for its bytes": append(append(good[:25:25], 0xff, 0xff, 0x03), 'x'),
	}
	for name, body := range cases {
		var el Element
		err := fuzzEnds.DecodeBody(KindTraced, body, &el)
		require.Error(t, err, name)
	}
	var el Element
	require.NoError(t, fuzzEnds.DecodeBody(KindTraced, good, &el))

	// In a batch, too.
	b := AppendUvarint(nil, 1)
	b = append(b, byte(KindTraced), 0, 0, 0, 0)
	body := append(head(seedTrace, KindTraced), good...)
	PutU32(b[len(b)-4:], uint32(len(body)))
	b = append(b, body...)
	it, err := fuzzEnds.NewBatchIter(b)
	require.NoError(t, err)
	_, err = it.Next(&el)
	require.ErrorIs(t, err, ErrMalformed)
}
