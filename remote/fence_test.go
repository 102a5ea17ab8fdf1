package remote

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFenceFrameRoundTripAndLimit(t *testing.T) {
	e := ends{selfNode: "a", selfInc: 1, peerNode: "b", peerInc: 2}
	frame := e.appendFrame(nil, &Element{Kind: KindControl, Control: &Control{Op: CtlFence, Links: []uint64{7, 1 << 40}}})
	var el Element
	require.NoError(t, e.decodeBody(KindControl, frame[frameHeader+1:], &el))
	require.Equal(t, CtlFence, el.Control.Op)
	require.Equal(t, []uint64{7, 1 << 40}, el.Control.Links)

	// A fence naming more links than any node sends is bad input.
	too := make([]uint64, maxFenceLinks+1)
	frame = e.appendFrame(nil, &Element{Kind: KindControl, Control: &Control{Op: CtlFence, Links: too}})
	require.ErrorContains(t, e.decodeBody(KindControl, frame[frameHeader+1:], &el), "fenced links")
}
