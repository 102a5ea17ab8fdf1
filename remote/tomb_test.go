package remote

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// (fix) Every incarnation a node ends is buried: a hello from it later is
// refused as declared dead (authenticated), instead of being attached to
// the ended peer, whose calls would fail as not sent for ever while its
// links looked up. Before, only a replacement by a hello and discovery's
// Down buried an incarnation: one ended by discovery's newer Up, or gone
// after its goodbye, was attached again.
func TestAnEndedIncarnationIsRefusedAsDeclaredDead(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, b *Node, conn net.Conn)
	}{
		{"gone after its goodbye", func(t *testing.T, b *Node, conn net.Conn) {
			e := rawEndsAs(b, "a", 1)
			frame := e.AppendFrame(nil, &wire.Element{Kind: wire.KindGoodbye, Reason: "stopping", Clean: true})
			_, err := conn.Write(frame)
			require.NoError(t, err)
		}},
		{"replaced by discovery's newer incarnation once its link closed", func(t *testing.T, b *Node, conn net.Conn) {
			conn.Close() // linked, it is kept: the listing is no evidence it is gone
			waitFor(t, "a/1's link closed", func() bool { return b.Stats().Links == 0 })
			b.onMember(discovery.Event{Type: discovery.MemberUp, Member: discovery.Member{Node: "a", Incarnation: 2, Addr: "127.0.0.1:1"}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := memnet.New()
			_, b, _ := startNode(t, "b", Config{Network: net, Liveness: Liveness{HeartbeatInterval: time.Hour}})
			gone := make(chan PeerInfo, 4)
			b.AddHooks(Hooks{OnPeerGone: func(p PeerInfo) { gone <- p }})
			hello := func() error {
				conn, err := net.Dial(context.Background(), b.Addr())
				require.NoError(t, err)
				t.Cleanup(func() { conn.Close() })
				_, err = wire.ClientHandshake(conn, []byte(testCookie), wire.Hello{Node: "a", Inc: 1, Addr: "127.0.0.1:1"}, soon(), nil)
				if err != nil {
					conn.Close()
				}
				return err
			}
			conn, err := net.Dial(context.Background(), b.Addr())
			require.NoError(t, err)
			t.Cleanup(func() { conn.Close() })
			_, err = wire.ClientHandshake(conn, []byte(testCookie), wire.Hello{Node: "a", Inc: 1, Addr: "127.0.0.1:1"}, soon(), nil)
			require.NoError(t, err)
			waitFor(t, "a/1 linked", func() bool { return b.Stats().Links == 1 })

			tc.end(t, b, conn)
			select {
			case p := <-gone:
				require.Equal(t, uint64(1), p.Incarnation)
			case <-time.After(30 * time.Second):
				t.Fatal("a/1 was not ended")
			}

			err = hello()
			require.ErrorIs(t, err, ErrHandshake)
			var r *wire.Refusal
			require.ErrorAs(t, err, &r)
			require.Equal(t, wire.CodeDeclaredDead, r.Code, "%v", err)
			require.True(t, r.Authenticated, "%v", err)
		})
	}
}
