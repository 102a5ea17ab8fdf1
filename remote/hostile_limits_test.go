package remote

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// The limits a cookie holder could still push on (issue 23): the name
// table, the watchers of an actor, a reader busy on one frame.

// sayHellos links to n from ip as count new names (tag-i) and closes
// each link at once; it returns how many were admitted.
func sayHellos(t *testing.T, n *Node, ip, tag string, count int) int {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	ok := 0
	for i := range count {
		c, err := d.Dial("tcp", n.Addr())
		require.NoError(t, err)
		h := wire.Hello{Node: fmt.Sprintf("%s-%d", tag, i), Inc: uint64(i + 1), Addr: "127.0.0.1:1"}
		if _, err := wire.ClientHandshake(c, []byte(testCookie), h, time.Now().Add(5*time.Second), nil); err == nil {
			ok++
		}
		c.Close()
	}
	return ok
}

// TestOnePeerCannotLockNamesOutOfTheTable: MaxNodes 64, so at most 16
// names per source address. A cookie holder says hello under 300 names
// it made up, from one address, then from the address of the nodes that
// come next: new nodes from either address link (every one of 20), the
// linked peer keeps its name, and the attacker's names are what is
// forgotten. Before: once the table held MaxNodes names whose
// incarnations were not gone, every new name was refused too_many_nodes
// until ForgetNodesAfter (5 minutes) had passed.
func TestOnePeerCannotLockNamesOutOfTheTable(t *testing.T) {
	const maxNodes = 64
	_, victim, _ := startNode(t, "victim", Config{MaxNodes: maxNodes})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	lg := startLegit(t, good, "victim")

	for _, c := range []struct{ name, attackerIP string }{
		{"from another address", "127.0.0.2"},
		{"from the newcomers' address", "127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			invented := sayHellos(t, victim, c.attackerIP, "invented-"+c.attackerIP, 300)
			victim.mu.Lock()
			known := len(victim.slots)
			victim.mu.Unlock()
			fresh := sayHellos(t, victim, "127.0.0.1", "fresh-"+c.attackerIP, 20)
			_, linked := victim.Peer("good")
			t.Logf("300 invented names from %s: %d admitted, %d names known after; then 20 new nodes from 127.0.0.1: %d admitted; %d names forgotten in all", c.attackerIP, invented, known, fresh, victim.Stats().NodesForgotten)
			require.Equal(t, 20, fresh, "new nodes link")
			require.True(t, linked, "the linked peer keeps its name")
			require.LessOrEqual(t, known, maxNodes)
		})
	}
	calls, p99, worst := lg.check(t)
	t.Logf("legitimate peer: %d calls, p99 %v, worst %v", calls, p99, worst)
}
