package peers

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A runtime link's word, stepped through each life it can have: the
// phase after every transition, and what a writer is told.
func TestLinkWordPhases(t *testing.T) {
	type step struct {
		do      func(*LinkWord)
		phase   LinkState
		refuses bool
	}
	started := func(w *LinkWord) { w.MarkStarted() }
	cases := map[string][]step{
		"opened and closed": {
			{func(*LinkWord) {}, LinkHello, false},
			{started, LinkOpen, false},
			{func(w *LinkWord) { w.MarkClosed() }, LinkEnded, true},
		},
		"we close it for idleness": {
			{started, LinkOpen, false},
			{func(w *LinkWord) { w.MarkIdleClosing() }, LinkIdleClosing, true},
			{func(w *LinkWord) { w.MarkFenced() }, LinkIdleClosing, true}, // the fence names it: still closing for idleness
			{func(w *LinkWord) { w.MarkGoodbye(true) }, LinkIdleClosing, true},
			{func(w *LinkWord) { w.MarkClosed() }, LinkEnded, true},
		},
		"its dialer closes it for idleness": {
			{started, LinkOpen, false},
			{func(w *LinkWord) { w.MarkPeerIdle() }, LinkPeerIdle, false},
			{func(w *LinkWord) { w.MarkClosed() }, LinkEnded, true},
		},
		"a pool link fenced, then half-closed": {
			{started, LinkOpen, false},
			{func(w *LinkWord) { w.MarkFenced() }, LinkOpen, false}, // named in a fence, still written until half-closed
			{func(w *LinkWord) { w.MarkHalfClosed() }, LinkFenced, true},
			{func(w *LinkWord) { w.MarkClosed() }, LinkEnded, true},
		},
		"the peer says goodbye": {
			{started, LinkOpen, false},
			{func(w *LinkWord) { w.MarkGoodbye(false) }, LinkOpen, true},
			{func(w *LinkWord) { w.MarkClosed() }, LinkEnded, true},
		},
		"closed before it started": {
			{func(w *LinkWord) { w.MarkClosed() }, LinkEnded, true},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			var w LinkWord
			for i, s := range steps {
				s.do(&w)
				require.Equal(t, s.phase, w.Phase(), "step %d", i)
				require.Equal(t, s.refuses, w.Refuses(), "step %d: refuses", i)
			}
		})
	}
}

// The transitions that happen once say so to exactly one caller.
func TestLinkWordOnceTransitions(t *testing.T) {
	var w LinkWord
	require.True(t, w.MarkFenced())
	require.False(t, w.MarkFenced())
	require.False(t, w.TakeFinIdle(), "nothing to half-close before an idle close")
	w.MarkIdleClosing()
	require.True(t, w.Has(BitIdleClosed|BitHalfClosed), "an idle close is a half-close")
	require.True(t, w.TakeFinIdle())
	require.False(t, w.TakeFinIdle())
	require.True(t, w.Has(BitIdleClosed), "taking the half-close keeps the idle mark")
	said, clean := w.Goodbye()
	require.False(t, said || clean)
	w.MarkGoodbye(true)
	said, clean = w.Goodbye()
	require.True(t, said && clean)
	require.True(t, w.MarkClosed())
	require.False(t, w.MarkClosed())
	require.True(t, w.Closed())
}

// A peer incarnation only moves forward: up, leaving, gone; End reports
// the one caller that ended it.
func TestPeerStateOnlyMovesForward(t *testing.T) {
	s := PeerUp
	s.Leave()
	require.Equal(t, PeerLeaving, s)
	s.Leave()
	require.Equal(t, PeerLeaving, s)
	require.True(t, s.End())
	require.Equal(t, PeerGone, s)
	require.False(t, s.End())
	s.Leave()
	require.Equal(t, PeerGone, s, "a gone incarnation does not come back leaving")

	up := PeerUp
	require.True(t, up.End(), "an up incarnation can end without leaving (superseded, reported down)")
}

// A name's marks are independent: listing and unlisting leave the user's
// pin and the keeper's mark as they are.
func TestNameMarks(t *testing.T) {
	var m NameMarks
	require.False(t, m.Listed() || m.Pinned() || m.Kept())
	m.List()
	m.Pin()
	require.True(t, m.Listed() && m.Pinned())
	require.False(t, m.Kept())
	m.Relist(false)
	require.False(t, m.Listed(), "no incarnation listed any more")
	require.True(t, m.Pinned(), "the pin holds for any incarnation")
	m.Keep()
	m.Relist(true)
	require.True(t, m.Listed() && m.Pinned() && m.Kept())
}
