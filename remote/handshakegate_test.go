package remote

import (
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// namedConn stands for a connection in the gate's tests.
type namedConn struct {
	net.Conn
	name string
}

// TestTheHandshakeGateShedsTheSlowestOfTheLargestSource steps the gate's
// rules one arrival at a time: at the per-source cap the source's slowest
// handshake goes, at the node-wide cap the slowest of the source holding
// the most, a proved handshake never goes, and a newcomer is refused only
// when everything at the cap has proved.
func TestTheHandshakeGateShedsTheSlowestOfTheLargestSource(t *testing.T) {
	g := newHandshakeGate(4, 3)
	slots := map[string]*handshakeSlot{}
	enter := func(src, name string) string {
		t.Helper()
		s, shed := g.enter(src, &namedConn{name: name})
		if s != nil {
			slots[name] = s
		}
		if shed == nil {
			return ""
		}
		return shed.(*namedConn).name
	}
	require.Empty(t, enter("A", "a1"))
	require.Empty(t, enter("A", "a2"))
	require.Empty(t, enter("A", "a3"))
	require.Equal(t, "a1", enter("A", "a4"), "per-source cap: the oldest of those that said nothing")
	slots["a2"].stage.Store(stageHello)
	require.Equal(t, "a3", enter("A", "a5"), "a silent one before an older one that sent its hello")
	require.True(t, g.leave(slots["a3"]), "a shed slot was already given back")
	require.Equal(t, 3, g.inProgress())

	require.Empty(t, enter("B", "b1"))
	require.Equal(t, 4, g.inProgress())
	require.Equal(t, "a4", enter("C", "c1"), "node-wide cap: the slowest of the source holding the most")
	require.Equal(t, 4, g.inProgress())
	// A, B and C hold 2, 1 and 1: the next newcomer sheds from A again,
	// whatever its own source.
	require.Equal(t, "a5", enter("B", "b2"))

	for _, s := range []string{"a2", "b1", "c1", "b2"} {
		require.True(t, g.prove(slots[s]))
	}
	s, shed := g.enter("D", &namedConn{name: "d1"})
	require.Nil(t, s, "everything at the cap has proved: the newcomer is refused")
	require.Nil(t, shed)
	require.False(t, g.leave(slots["b1"]))
	require.Equal(t, 3, g.inProgress())
	require.Empty(t, enter("D", "d1"))

	// An address holding less than half as many as the most is not the
	// one to lose a handshake, however old its own.
	g = newHandshakeGate(5, 5)
	slots = map[string]*handshakeSlot{}
	require.Empty(t, enter("B", "b1"))
	for i := range 4 {
		require.Empty(t, enter("A", fmt.Sprintf("a%d", i)))
	}
	require.Equal(t, "a0", enter("C", "c1"))
	// A (3), B (1) and C (1): A alone is over half the most.
	require.Equal(t, "a1", enter("D", "d1"))
	// A (2), B, C, D (1 each): all of them are; b1 is the oldest.
	require.Equal(t, "b1", enter("E", "e1"))
}

// TestAHandshakeConnMarksItsStage: the stage moves to heard at the first
// byte and to hello once the whole first message (u16be length ‖ body)
// has been read, however the reads split it.
func TestAHandshakeConnMarksItsStage(t *testing.T) {
	for _, chunks := range [][]int{{1, 1, 3}, {2, 3}, {5}, {1, 4}} {
		a, b := net.Pipe()
		s := &handshakeSlot{}
		c := newHandshakeConn(a, s, soon(), true)
		msg := []byte{0, 3, 'a', 'b', 'c', 'x'}
		go func() {
			off := 0
			for _, n := range chunks {
				_, _ = b.Write(msg[off : off+n])
				off += n
			}
		}()
		buf := make([]byte, 8)
		for i, n := range chunks {
			got, err := c.Read(buf[:n])
			require.NoError(t, err)
			require.Equal(t, n, got)
			want := stageHeard
			if i == len(chunks)-1 {
				want = stageHello
			}
			require.Equal(t, want, s.stage.Load(), "chunks %v, after read %d", chunks, i)
		}
		a.Close()
		b.Close()
	}
}
