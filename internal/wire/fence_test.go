package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFenceFrameRoundTripAndLimit(t *testing.T) {
	e := Ends{SelfNode: "a", SelfInc: 1, PeerNode: "b", PeerInc: 2}
	frame := e.AppendFrame(nil, &Element{Kind: KindControl, Control: &Control{Op: CtlFence, Links: []uint64{7, 1 << 40}}})
	var el Element
	require.NoError(t, e.DecodeBody(KindControl, frame[FrameHeader+1:], &el))
	require.Equal(t, CtlFence, el.Control.Op)
	require.Equal(t, []uint64{7, 1 << 40}, el.Control.Links)

	// A fence naming more links than any node sends is bad input.
	too := make([]uint64, MaxFenceLinks+1)
	frame = e.AppendFrame(nil, &Element{Kind: KindControl, Control: &Control{Op: CtlFence, Links: too}})
	require.ErrorContains(t, e.DecodeBody(KindControl, frame[FrameHeader+1:], &el), "fenced links")
}

func TestIdleCloseFrameHasNoFields(t *testing.T) {
	e := Ends{SelfNode: "a", SelfInc: 1, PeerNode: "b", PeerInc: 2}
	frame := e.AppendFrame(nil, &Element{Kind: KindControl, Control: &Control{Op: CtlIdleClose}})
	require.Equal(t, []byte{byte(KindControl), byte(CtlIdleClose)}, frame[FrameHeader:], "the kind and the op, nothing else")
	var el Element
	require.NoError(t, e.DecodeBody(KindControl, frame[FrameHeader+1:], &el))
	require.Equal(t, CtlIdleClose, el.Control.Op)

	// An op past the last one is bad input.
	require.ErrorContains(t, e.DecodeBody(KindControl, []byte{byte(CtlIdleClose) + 1}, &el), "control op")
}
