package remote

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// rawEnds are the ends of a rawPeer's link to n, from the raw side.
func rawEnds(n *Node) wire.Ends {
	return wire.Ends{SelfNode: "raw", SelfInc: 77, PeerNode: n.sys.Name(), PeerInc: n.sys.Incarnation()}
}

// readReply reads frames from conn until a reply (pings are answered by
// nobody: the test is quick) and decodes it.
func readReply(t *testing.T, conn net.Conn, e wire.Ends) wire.Element {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer conn.SetReadDeadline(time.Time{})
	fr := wire.NewFrameReader(conn, 1<<20)
	for {
		k, body, err := fr.Next()
		require.NoError(t, err)
		if k != wire.KindReply {
			continue
		}
		var el wire.Element
		require.NoError(t, e.DecodeBody(k, body, &el))
		return el
	}
}

// TestAPIDOfADeadIncarnationReachesNoActor: a peer addresses an actor by
// a PID whose incarnation is not the node's current one (the node
// restarted; the ID is now another actor's). A request gets a no_process
// error reply, a send becomes a dead letter, the live actor with that ID
// sees neither, and the link stays up.
func TestAPIDOfADeadIncarnationReachesNoActor(t *testing.T) {
	sys, victim, _ := startNode(t, "victim", Config{})
	got := make(chan any, 4)
	pid, err := sys.SpawnFunc(func(c *actor.Context) {
		if e, ok := c.Message().(*testpb.Echo); ok {
			got <- e
			c.Respond(e)
		}
	})
	require.NoError(t, err)
	conn := rawPeer(t, victim, testCookie)
	e := rawEnds(victim)
	stale := actor.PID{Node: pid.Node, Incarnation: pid.Incarnation ^ 0x5a5a, ID: pid.ID}
	typ, payload, err := marshal(&testpb.Echo{Text: "stale"})
	require.NoError(t, err)
	before := sys.DeadLetters()

	_, err = conn.Write(e.AppendFrame(nil, &wire.Element{Kind: wire.KindSend, To: stale, Type: typ, Payload: payload}))
	require.NoError(t, err)
	_, err = conn.Write(e.AppendFrame(nil, &wire.Element{Kind: wire.KindRequest, ID: 9, To: stale, Type: typ, Payload: payload}))
	require.NoError(t, err)
	reply := readReply(t, conn, e)
	require.Equal(t, uint64(9), reply.ID)
	require.Equal(t, wire.StatusError, reply.Status)
	require.Equal(t, "no_process", reply.Code, "not executed: %s", reply.Message)
	waitFor(t, "the send counted as a dead letter", func() bool { return sys.DeadLetters() == before+1 })

	// The link is still up and the live PID works on it.
	_, err = conn.Write(e.AppendFrame(nil, &wire.Element{Kind: wire.KindRequest, ID: 10, To: pid, Type: typ, Payload: payload}))
	require.NoError(t, err)
	reply = readReply(t, conn, e)
	require.Equal(t, wire.StatusOK, reply.Status)
	require.Len(t, got, 1, "only the request to the live PID reached the actor")
	require.Zero(t, victim.Stats().BadFrames)
}

// TestTruncatedFrameMidStream: good frames, then a frame cut short and
// the end of the stream. The link is closed with the reason logged and
// counted; the frames before it were handled; other links keep working.
func TestTruncatedFrameMidStream(t *testing.T) {
	sys, victim, logs := startNode(t, "victim", Config{})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	got := make(chan struct{}, 8)
	_, err := sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if _, ok := c.Message().(*testpb.Echo); ok {
			got <- struct{}{}
		}
	}), "counter")
	require.NoError(t, err)
	conn := rawPeer(t, victim, testCookie)
	e := rawEnds(victim)
	typ, payload, err := marshal(&testpb.Echo{Text: "x"})
	require.NoError(t, err)
	var stream []byte
	for range 3 {
		stream = e.AppendFrame(stream, &wire.Element{Kind: wire.KindSend, ToName: "counter", Type: typ, Payload: payload})
	}
	cut := e.AppendFrame(nil, &wire.Element{Kind: wire.KindSend, ToName: "counter", Type: typ, Payload: payload})
	stream = append(stream, cut[:len(cut)-3]...)
	_, err = conn.Write(stream)
	require.NoError(t, err)
	require.NoError(t, conn.(*net.TCPConn).CloseWrite()) // the stream ends mid-frame
	assertClosedByPeer(t, conn)
	waitFor(t, "reason logged", func() bool { return strings.Contains(logs.String(), "truncated frame") })
	// Queued before the cut was read; the counter takes them in its own
	// time.
	waitFor(t, "the whole frames before it handled", func() bool { return len(got) == 3 })
	require.Equal(t, uint64(1), victim.Stats().BadFrames)
	healthy(t, good, "victim")
}

// TestWrongCookieRefusalIsLoggedByTheServer: a client with another
// cookie cannot link, and the node it tried logs why (the dialer's side
// is TestWrongCookieIsRefusedAndOthersKeepWorking); its other links keep
// working.
func TestWrongCookieRefusalIsLoggedByTheServer(t *testing.T) {
	_, victim, logs := startNode(t, "victim", Config{})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	conn, err := net.Dial("tcp", victim.Addr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = wire.ClientHandshake(conn, []byte("not the cookie, but long enough"), wire.Hello{Node: "intruder", Inc: 3, Addr: "127.0.0.1:1"}, soon(), nil)
	require.ErrorContains(t, err, "bad cookie")
	waitFor(t, "the refusal logged", func() bool {
		return strings.Contains(logs.String(), "link refused") && strings.Contains(logs.String(), "bad cookie")
	})
	require.GreaterOrEqual(t, victim.Stats().HandshakeFailures, uint64(1))
	healthy(t, good, "victim")
}

// TestRandomBytesAfterTheHandshake: authenticated peers that then send
// random bytes. Each link is closed with a logged reason (a bad length,
// kind or body), the node never panics, and keeps serving others.
//
// A link whose junk parses as the start of a frame waits for the rest,
// and silence ends it: the victim's logical clock moves an interval a
// step, each step once the good peer was heard on every link since the
// last (stepHeard), until the link closes; so the good peer is never
// silent however slow the machine. The good peer's clock stands still.
func TestRandomBytesAfterTheHandshake(t *testing.T) {
	const iv = 100 * time.Millisecond
	clk := newLogicalClock()
	_, victim, logs := startNodeAt(t, "victim", Config{Liveness: Liveness{HeartbeatInterval: iv}, Limits: Limits{MaxFrameSize: 1 << 20}}, clk)
	good, goodNode, _ := startNodeAt(t, "good", Config{}, newLogicalClock())
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	goodLinks := []*link{onlyLink(t, victim, "good")}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		conn := rawPeer(t, victim, testCookie)
		junk := make([]byte, 64+rng.IntN(4096))
		for j := range junk {
			junk[j] = byte(rng.Uint32())
		}
		if i%2 == 0 { // a plausible length, then junk
			binary.BigEndian.PutUint32(junk, uint32(len(junk)-4))
		}
		_, _ = conn.Write(junk)
		// A frame that happens to parse waits for more bytes; silence then
		// ends it (heartbeats): either way the link closes.
		closed := make(chan error, 1)
		go func() { closed <- readToEnd(conn) }()
		for steps := 0; ; steps++ {
			select {
			case err := <-closed:
				require.NotContains(t, err.Error(), "timeout", "the node should have closed link %d", i)
			default:
				// The window is 3 intervals, closed at the 4th step after the
				// link's last read: 20 steps allow for the reads to trail.
				require.Less(t, steps, 20, "link %d still open after %d steps", i, steps)
				stepHeard(t, clk, victim, "good", iv)
				continue
			}
			break
		}
	}
	require.NotContains(t, logs.String(), "panic")
	require.GreaterOrEqual(t, victim.Stats().BadFrames, uint64(10))
	for _, l := range goodLinks {
		require.False(t, l.isClosed(), "a link of the good peer was closed")
	}
	healthy(t, good, "victim")
}

// TestUnregisteredPayloadTypeGetsAnErrorReply: a call whose argument is
// of a type the node never registered is answered bad_message (not
// executed); a send of one is a dead letter. The link stays up.
func TestUnregisteredPayloadTypeGetsAnErrorReply(t *testing.T) {
	sys, victim, _ := startNode(t, "victim", Config{})
	conn := rawPeer(t, victim, testCookie)
	e := rawEnds(victim)
	before := sys.DeadLetters()
	_, err := conn.Write(e.AppendFrame(nil, &wire.Element{Kind: wire.KindSend, ToName: "nobody", Type: "evil.Type", Payload: []byte{1, 2}}))
	require.NoError(t, err)
	_, err = conn.Write(e.AppendFrame(nil, &wire.Element{Kind: wire.KindCall, ID: 5, Fn: "echo", Type: "evil.Type", Payload: []byte{1, 2}}))
	require.NoError(t, err)
	reply := readReply(t, conn, e)
	require.Equal(t, wire.StatusError, reply.Status)
	require.Equal(t, "bad_message", reply.Code)
	require.Contains(t, reply.Message, "unregistered message type")
	waitFor(t, "the send counted", func() bool { return sys.DeadLetters() == before+1 })
	require.Zero(t, victim.Stats().BadFrames, "a payload type is not a wire error")
}
