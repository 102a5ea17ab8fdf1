package cluster

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func threeNodes() []candidate {
	return []candidate{{"n1", 0x1111}, {"n2", 0x2222}, {"n3", 0x3333}}
}

// TestOwnerEven: 10,000 identities over 3 nodes land within ±15 % of an
// even share on every node (issue 25's acceptance bound).
func TestOwnerEven(t *testing.T) {
	cands := threeNodes()
	counts := map[string]int{}
	const n = 10000
	for i := range n {
		c, ok := owner("account", "user-"+strconv.Itoa(i), cands)
		require.True(t, ok)
		counts[c.node]++
	}
	even := float64(n) / float64(len(cands))
	for _, c := range cands {
		got := float64(counts[c.node])
		t.Logf("%s: %d identities (%.1f %% of even)", c.node, counts[c.node], 100*got/even)
		require.InDelta(t, even, got, 0.15*even, "node %s", c.node)
	}
}

// TestOwnerOrderFree: the owner does not depend on the order the
// candidates are listed in (every node must agree).
func TestOwnerOrderFree(t *testing.T) {
	a := threeNodes()
	b := []candidate{a[2], a[0], a[1]}
	for i := range 1000 {
		id := "id-" + strconv.Itoa(i)
		x, _ := owner("k", id, a)
		y, _ := owner("k", id, b)
		require.Equal(t, x, y, id)
	}
}

// TestOwnerJoinMovesOnlyToNewcomer: when a fourth node joins, every
// identity either keeps its owner or moves to the newcomer, and about a
// quarter move; when a node leaves, only its identities move.
func TestOwnerJoinMovesOnlyToNewcomer(t *testing.T) {
	three := threeNodes()
	four := append(append([]candidate(nil), three...), candidate{"n4", 0x4444})
	moved := 0
	const n = 10000
	for i := range n {
		id := "user-" + strconv.Itoa(i)
		before, _ := owner("account", id, three)
		after, _ := owner("account", id, four)
		if before != after {
			require.Equal(t, "n4", after.node, "%s moved between old nodes", id)
			moved++
		}
		left, _ := owner("account", id, three[1:])
		if before.node != "n1" {
			require.Equal(t, before, left, "%s moved though its owner stayed", id)
		}
	}
	require.InDelta(t, n/4, moved, 0.15*n/4)
}

// TestOwnerIncarnation: a node restarted under the same name is a new
// candidate: identities are reshuffled onto it, not kept by name.
func TestOwnerIncarnation(t *testing.T) {
	a := threeNodes()
	b := threeNodes()
	b[0].incarnation = 0x9999
	diff := 0
	for i := range 1000 {
		id := "id-" + strconv.Itoa(i)
		x, _ := owner("k", id, a)
		y, _ := owner("k", id, b)
		if x.node != y.node {
			diff++
		}
	}
	require.NotZero(t, diff)
}

func TestOwnerNone(t *testing.T) {
	_, ok := owner("k", "id", nil)
	require.False(t, ok)
}

// TestKeyHashSeparates: the kind/identity boundary is part of the key.
func TestKeyHashSeparates(t *testing.T) {
	require.NotEqual(t, keyHash("a", "bc"), keyHash("ab", "c"))
}
