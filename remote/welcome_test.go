package remote

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// (fix) A client claiming a new incarnation of a name whose old one has
// no live link replaces it when admitted, before its welcome is sent. If
// the welcome cannot be sent, the old incarnation is still ended
// (OnPeerGone, its calls failed, its casts cancelled). Before, accept
// dropped it: buried, replaced, never ended.
func TestAReplacedIncarnationIsEndedWhenTheWelcomeFails(t *testing.T) {
	net := memnet.New() // synchronous pipes: a write to a closed end fails
	_, b, _ := startNode(t, "b", Config{Network: net, Liveness: Liveness{HeartbeatInterval: time.Hour}})
	gone := make(chan PeerInfo, 4)
	b.AddHooks(Hooks{OnPeerGone: func(p PeerInfo) { gone <- p }})
	ctx := context.Background()

	// Incarnation 1 of a links, then its link closes without a goodbye
	// (a crash).
	c1, err := net.Dial(ctx, b.Addr())
	require.NoError(t, err)
	_, err = wire.ClientHandshake(c1, []byte(testCookie), wire.Hello{Node: "a", Inc: 1, Addr: "127.0.0.1:1"}, soon(), nil)
	require.NoError(t, err)
	waitFor(t, "a/1 linked", func() bool { return b.Stats().Links == 1 })
	require.NoError(t, c1.Close())
	waitFor(t, "a/1's link down", func() bool { return b.Stats().Links == 0 })
	info, ok := b.Peer("a")
	require.True(t, ok)
	require.Equal(t, uint64(1), info.Incarnation)

	// Incarnation 2 proves the cookie, is admitted, and hangs up before
	// b's welcome.
	c2, err := net.Dial(ctx, b.Addr())
	require.NoError(t, err)
	_, err = wire.ClientHandshake(&hangUpBeforeVerdict{Conn: c2}, []byte(testCookie), wire.Hello{Node: "a", Inc: 2, Addr: "127.0.0.1:1"}, soon(), nil)
	require.Error(t, err)

	select {
	case p := <-gone:
		require.Equal(t, "a", p.Node)
		require.Equal(t, uint64(1), p.Incarnation, "the replaced incarnation ended")
	case <-time.After(30 * time.Second):
		t.Fatal("incarnation 1 of a was replaced but never ended")
	}
	info, ok = b.Peer("a")
	require.True(t, ok)
	require.Equal(t, uint64(2), info.Incarnation)
}

// hangUpBeforeVerdict is a client connection that closes, instead of
// reading, once it has written its hello and its proof.
type hangUpBeforeVerdict struct {
	net.Conn
	writes atomic.Int32
}

func (c *hangUpBeforeVerdict) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

func (c *hangUpBeforeVerdict) Read(b []byte) (int, error) {
	if c.writes.Load() >= 2 {
		_ = c.Conn.Close()
		return 0, io.EOF
	}
	return c.Conn.Read(b)
}
