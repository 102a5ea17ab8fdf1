package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

var seedHeaders = actor.Headers{{Key: "idem", Value: "k-1"}, {Key: "tenant", Value: "t"}}

func TestHeaderedFramesRoundTrip(t *testing.T) {
	for _, el := range tracedEls() {
		for _, withTrace := range []bool{true, false} {
			el := el
			if !withTrace {
				el.Trace = Trace{}
			}
			el.Headers = seedHeaders
			frame := fuzzEnds.AppendFrame(nil, &el)
			require.Equal(t, KindHeadered, Kind(frame[FrameHeader]))
			var got Element
			require.NoError(t, fuzzEnds.DecodeBody(KindHeadered, frame[FrameHeader+1:], &got))
			require.Equal(t, el.Kind, got.Kind)
			require.Equal(t, seedHeaders, got.Headers)
			require.Equal(t, el.Trace, got.Trace)
			require.Equal(t, el.ID, got.ID)
			require.Equal(t, el.Kind, Unwrap(KindHeadered, frame[FrameHeader+1:]))

			// Without headers the frame is what it was before headers
			// existed: the headered frame's tail.
			plain := el
			plain.Headers = nil
			without := fuzzEnds.AppendFrame(nil, &plain)
			require.NotEqual(t, KindHeadered, Kind(without[FrameHeader]))
			require.True(t, bytes.HasSuffix(frame, without[FrameHeader+1:]))

			// And in a batch.
			b, start := beginFrame(nil, KindBatch)
			b = AppendUvarint(b, 1)
			b = fuzzEnds.appendElement(b, &el)
			b = endFrame(b, start)
			it, err := fuzzEnds.NewBatchIter(b[FrameHeader+1:])
			require.NoError(t, err)
			ok, err := it.Next(&got)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, seedHeaders, got.Headers)
		}
	}
}

// rawHeadered is a headered body of the given pairs around a send.
func rawHeadered(count uint64, pairs []string, inner Kind) []byte {
	b := AppendUvarint(nil, count)
	for _, s := range pairs {
		b = AppendString(b, s)
	}
	send := Element{Kind: KindSend, ToName: "x", Type: "t.M"}
	return append(append(b, byte(inner)), fuzzEnds.appendBody(nil, &send)...)
}

func TestHeaderedFramesMalformed(t *testing.T) {
	big := strings.Repeat("v", actor.MaxHeaderBytes)
	many := make([]string, 0, 2*(actor.MaxHeaders+1))
	for i := 0; i <= actor.MaxHeaders; i++ {
		many = append(many, string(rune('a'+i%26))+strings.Repeat("k", i), "v")
	}
	cases := map[string][]byte{
		"no headers":       rawHeadered(0, nil, KindSend),
		"count over bound": rawHeadered(uint64(len(many)/2), many, KindSend),
		"huge count":       rawHeadered(1<<40, []string{"k", "v"}, KindSend),
		"bytes over bound": rawHeadered(1, []string{"k", big}, KindSend),
		"empty key":        rawHeadered(1, []string{"", "v"}, KindSend),
		"repeated key":     rawHeadered(2, []string{"k", "1", "k", "2"}, KindSend),
		"wraps a reply":    rawHeadered(1, []string{"k", "v"}, KindReply),
		"wraps headered":   rawHeadered(1, []string{"k", "v"}, KindHeadered),
		"truncated":        rawHeadered(2, []string{"k", "v"}, KindSend)[:6],
	}
	for name, body := range cases {
		var el Element
		err := fuzzEnds.DecodeBody(KindHeadered, body, &el)
		require.Error(t, err, name)
		require.True(t, errors.Is(err, ErrMalformed) || errors.Is(err, ErrTruncated), "%s: %v", name, err)
	}
	var el Element
	require.NoError(t, fuzzEnds.DecodeBody(KindHeadered, rawHeadered(1, []string{"k", "v"}, KindSend), &el))
}

// An encoder refuses headers the peer would close the link on.
func TestHeaderedEncodeRefusesOverBound(t *testing.T) {
	over := actor.Headers{{Key: "k", Value: strings.Repeat("v", actor.MaxHeaderBytes)}}
	el := Element{Kind: KindSend, ToName: "x", Type: "t.M", Headers: over}
	_, err := fuzzEnds.EncodeFrame(nil, &el)
	require.ErrorIs(t, err, actor.ErrBadMessage)
	el.Headers = actor.Headers{{Key: "a", Value: "1"}, {Key: "a", Value: "2"}}
	_, err = fuzzEnds.EncodeElement(nil, &el)
	require.ErrorIs(t, err, actor.ErrBadMessage)
}
