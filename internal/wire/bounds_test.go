package wire

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

// TestNamesOverTheBoundAreNeitherSentNorRead: a writer refuses an element
// with a name over MaxNameLen (bad_message: not sent); a reader closes on
// one (malformed) before copying it; at the bound it goes through.
func TestNamesOverTheBoundAreNeitherSentNorRead(t *testing.T) {
	long := strings.Repeat("n", MaxNameLen+1)
	for _, el := range []Element{
		{Kind: KindCast, Fn: long, Type: "t.M"},
		{Kind: KindSend, ToName: long, Type: "t.M"},
		{Kind: KindSend, ToName: "svc", Type: long},
	} {
		_, err := fuzzEnds.EncodeFrame(nil, &el)
		require.ErrorIs(t, err, actor.ErrBadMessage)
		_, err = fuzzEnds.EncodeElement(nil, &el)
		require.ErrorIs(t, err, actor.ErrBadMessage)
		b := fuzzEnds.AppendFrame(nil, &el) // written anyway, as a hostile peer would
		var got Element
		err = fuzzEnds.DecodeBody(Kind(b[4]), b[5:], &got)
		require.ErrorIs(t, err, ErrMalformed)
		require.ErrorContains(t, err, "exceeds 1024")
	}
	ok := Element{Kind: KindCast, Fn: long[:MaxNameLen], Type: "t.M"}
	b, err := fuzzEnds.EncodeFrame(nil, &ok)
	require.NoError(t, err)
	var got Element
	require.NoError(t, fuzzEnds.DecodeBody(Kind(b[4]), b[5:], &got))
	require.Equal(t, ok.Fn, got.Fn)
}

// TestAPIDOfANodeOffTheRuleIsMalformed: an explicit PID's node must be a
// node name.
func TestAPIDOfANodeOffTheRuleIsMalformed(t *testing.T) {
	el := Element{Kind: KindSend, To: actor.PID{Node: "mallory\xff", Incarnation: 3, ID: 1}, Type: "t.M"}
	b := fuzzEnds.AppendFrame(nil, &el)
	var got Element
	require.ErrorIs(t, fuzzEnds.DecodeBody(Kind(b[4]), b[5:], &got), ErrMalformed)
}

// TestErrorTextsAreCut: what an error reply says is cut at MaxErrorText
// (its code at MaxNameLen) by the writer, and by the reader of a peer
// that did not; a cut text is valid UTF-8 and says how long it was.
func TestErrorTextsAreCut(t *testing.T) {
	var el Element
	ErrorReply(&el, errors.New(strings.Repeat("é", 10<<10)))
	require.LessOrEqual(t, len(el.Message), MaxErrorText)
	require.True(t, utf8.ValidString(el.Message))
	require.Contains(t, el.Message, "(cut from 20480 bytes)")

	hostile := Element{Kind: KindReply, ID: 1, Status: StatusError, Code: strings.Repeat("c", 5000), Message: strings.Repeat("m", 1<<20)}
	b := fuzzEnds.AppendFrame(nil, &hostile)
	var got Element
	require.NoError(t, fuzzEnds.DecodeBody(Kind(b[4]), b[5:], &got))
	require.LessOrEqual(t, len(got.Message), MaxErrorText)
	require.LessOrEqual(t, len(got.Code), MaxNameLen)
	require.Contains(t, got.Message, "(cut from 1048576 bytes)")
	require.Equal(t, "short", CutText("short", 10))
}
