package bridge

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The pending table, step by step: entries leave by take and failPeer; an
// entry added after its peer is gone is refused; futures that ended on
// their own are swept when a shard doubles.
func TestPendingTable(t *testing.T) {
	var tab pendingTable
	tab.init()
	p, q := &peer{key: peerKey{"b", 1}}, &peer{key: peerKey{"c", 2}}
	alive := func(string) bool { return true }
	require.True(t, tab.add("future$1", "$a", p, alive))
	require.True(t, tab.add("future$2", "$b", p, alive))
	require.True(t, tab.add("future$3", "$c", q, alive))
	require.True(t, tab.take("future$1"))
	require.False(t, tab.take("future$1"))

	p.gone.Store(true)
	require.Equal(t, map[string]string{"future$2": "$b"}, tab.failPeer(p))
	require.False(t, tab.add("future$4", "$d", p, alive), "added to a gone peer")
	require.Equal(t, 1, tab.count())

	// 20 shards' worth of futures that all ended: adding more sweeps them.
	ended := make(map[string]bool)
	for i := range pendingShards * minSweep * 2 {
		id := "future$x" + strconv.Itoa(i)
		ended[id] = true
		tab.add(id, "$t", q, func(id string) bool { return !ended[id] })
	}
	require.Less(t, tab.count(), pendingShards*minSweep+1, "ended futures kept")
}
