package actor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAnActorsWatchersMapShrinksAsItsWatchersGo steps one process's
// system messages: 10,000 watches, then all but 10 unwatched. A Go map
// keeps its memory when entries are deleted, so the map is made again,
// small, once it holds less than a quarter of its peak, and dropped when
// empty (a remote peer can watch an actor up to its MaxWatchesPerPeer and
// go: issue 23 measured 7.4 MB left on the actor).
func TestAnActorsWatchersMapShrinksAsItsWatchersGo(t *testing.T) {
	p := &process{}
	watcher := func(i int) PID { return PID{Node: "peer", Incarnation: 7, ID: uint64(i + 1)} }
	for i := range 10000 {
		p.handleSys(&envelope{msg: sysWatch{watcher: watcher(i)}})
	}
	require.Len(t, p.watchers, 10000)
	require.Equal(t, 10000, p.watchPeak)
	before := p.watchers
	for i := range 9990 {
		p.handleSys(&envelope{msg: sysUnwatch{watcher: watcher(i)}})
	}
	require.Len(t, p.watchers, 10)
	require.Less(t, p.watchPeak, 2500, "made again once under a quarter of its peak")
	p.watchers[PID{}] = struct{}{} // a fresh map, not the old one
	_, inOld := before[PID{}]
	require.False(t, inOld)
	delete(p.watchers, PID{})
	for i := 9990; i < 10000; i++ {
		p.handleSys(&envelope{msg: sysUnwatch{watcher: watcher(i)}})
	}
	require.Nil(t, p.watchers, "dropped when empty")
	require.Zero(t, p.watchPeak)
}
