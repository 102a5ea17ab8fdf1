package remote

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/mailroom-go/mailroom/internal/wire"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestMain (goleak, child nodes) is in remote_test.go: one per binary.

// testCookie is the cookie of the package's in-process test nodes.
const testCookie = "remote-test-cookie-0123456789"

// soon is a handshake deadline for tests.
func soon() time.Time { return time.Now().Add(5 * time.Second) }

// admitAll admits every client that proved the cookie.
func admitAll(*wire.Hello) *wire.Refusal { return nil }

// startNode starts an in-process node with the echo function, on the
// wall clock (startNodeAt: on a logical one).
func startNode(t *testing.T, name string, cfg Config) (*actor.System, *Node, *logSink) {
	t.Helper()
	return startNodeAt(t, name, cfg, nil)
}

// rawPeer completes a real handshake with n and returns the connection,
// so the test can write whatever it likes after it.
func rawPeer(t *testing.T, n *Node, cookie string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", n.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = wire.ClientHandshake(conn, []byte(cookie), wire.Hello{Node: "raw", Inc: 77, Addr: "127.0.0.1:1"}, soon(), nil)
	require.NoError(t, err)
	return conn
}

// assertClosedByPeer waits until the node closes conn.
func assertClosedByPeer(t *testing.T, conn net.Conn) {
	t.Helper()
	require.NotContains(t, readToEnd(conn).Error(), "timeout", "the node should have closed the link")
}

// readToEnd reads conn until it fails, for at most 10 s, and returns the
// error: a timeout if the link is still open then.
func readToEnd(conn net.Conn) error {
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	for {
		if _, err := conn.Read(buf); err != nil {
			return err
		}
	}
}

// healthy checks that a well-behaved node still gets answers from n.
func healthy(t *testing.T, caller *actor.System, node string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := caller.Call(ctx, node, "echo", &testpb.Echo{Text: "ok"})
	require.NoError(t, err)
	require.Equal(t, "echo ok", v.(*testpb.Echo).Text)
}

func TestHostileInputClosesOnlyThatLink(t *testing.T) {
	_, victim, logs := startNode(t, "victim", Config{Limits: Limits{MaxFrameSize: 1 << 20}})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	healthy(t, good, "victim")

	frame := func(kind byte, body []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(body)+1))
		return append(append(b, kind), body...)
	}
	cases := []struct {
		name   string
		bytes  []byte
		reason string
	}{
		{"frame claiming 4 GiB", []byte{0xff, 0xff, 0xff, 0xff, byte(wire.KindSend)}, "exceeds MaxFrameSize"},
		{"unknown frame kind", frame(0x7f, []byte{1, 2, 3}), "unknown frame kind"},
		{"truncated send", frame(byte(wire.KindSend), []byte{0, 3}), "truncated"},
		{"garbage pid tag", frame(byte(wire.KindSend), []byte{0, 9, 9, 9}), "pid tag 9"},
		{"batch claiming a million entries", frame(byte(wire.KindBatch), []byte{0xc0, 0x84, 0x3d}), "batch claims"},
		{"zero-length frame", []byte{0, 0, 0, 0, 0}, "zero-length frame"},
		{"traced frame with a zero trace id", frame(byte(wire.KindTraced), traced(make([]byte, 16), 0, wire.KindCast, castBody)), "zero trace id"},
		{"traced frame with a zero span id", frame(byte(wire.KindTraced), tracedSpan(make([]byte, 8), wire.KindCast, castBody)), "zero span id"},
		{"traced frame with a tracestate too long", frame(byte(wire.KindTraced), traced(traceID, wire.MaxTraceState+1, wire.KindCast, castBody)), "tracestate of 513 bytes exceeds 512"},
		{"traced frame inside a traced frame", frame(byte(wire.KindTraced), traced(traceID, 0, wire.KindTraced, traced(traceID, 0, wire.KindCast, castBody))), "traced frame wraps traced"},
		{"traced reply", frame(byte(wire.KindTraced), traced(traceID, 0, wire.KindReply, []byte{1, 0, 0, 0})), "traced frame wraps reply"},
		{"traced frame in a batch, truncated", frame(byte(wire.KindBatch), append([]byte{1, byte(wire.KindTraced), 0, 0, 0, 20}, traced(traceID, 0, wire.KindCast, castBody)[:20]...)), "trace context"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := rawPeer(t, victim, testCookie)
			_, err := conn.Write(c.bytes)
			require.NoError(t, err)
			assertClosedByPeer(t, conn)
			waitFor(t, "reason logged", func() bool { return strings.Contains(logs.String(), c.reason) })
			require.GreaterOrEqual(t, victim.Stats().BadFrames, uint64(i+1))
			healthy(t, good, "victim")
		})
	}
}

// The parts of hostile traced frames: a trace id, a cast's body, and a
// traced body of them (SPEC.md, "traced").
var (
	traceID  = []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	castBody = []byte{1, 'f', 0, 0}
)

// traced is a traced body: id, a valid span id, flags, a tracestate of
// stateLen bytes, the wrapped kind and body.
func traced(id []byte, stateLen int, k wire.Kind, body []byte) []byte {
	b := append(append([]byte(nil), id...), 1, 2, 3, 4, 5, 6, 7, 8, 1)
	b = wire.AppendString(b, strings.Repeat("a", stateLen))
	return append(append(b, byte(k)), body...)
}

// tracedSpan is traced with a valid trace id and span id span.
func tracedSpan(span []byte, k wire.Kind, body []byte) []byte {
	b := append(append(append([]byte(nil), traceID...), span...), 1, 0)
	return append(append(b, byte(k)), body...)
}

func TestRandomBytesAndReplayedHandshakeAreRefused(t *testing.T) {
	_, victim, logs := startNode(t, "victim", Config{})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))

	// Random bytes instead of a hello.
	conn, err := net.Dial("tcp", victim.Addr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	assertClosedByPeer(t, conn)
	waitFor(t, "bad magic logged", func() bool { return strings.Contains(logs.String(), "not a mailroom peer") })

	// A replayed client proof: record one real handshake's client side and
	// play it back on a new connection: the server's fresh nonce defeats it.
	rec := &recorder{}
	c1, err := net.Dial("tcp", victim.Addr())
	require.NoError(t, err)
	defer c1.Close()
	_, err = wire.ClientHandshake(&recConn{Conn: c1, rec: rec}, []byte(testCookie), wire.Hello{Node: "spy", Inc: 5, Addr: "127.0.0.1:1"}, soon(), nil)
	require.NoError(t, err)
	c2, err := net.Dial("tcp", victim.Addr())
	require.NoError(t, err)
	defer c2.Close()
	_, err = c2.Write(rec.bytes())
	require.NoError(t, err)
	assertClosedByPeer(t, c2)
	waitFor(t, "replay refused", func() bool {
		return strings.Contains(logs.String(), "could not prove it knows the cookie")
	})
	healthy(t, good, "victim")
}

func TestVersionMismatchRefusedWithReason(t *testing.T) {
	_, victim, logs := startNode(t, "victim", Config{})
	conn, err := net.Dial("tcp", victim.Addr())
	require.NoError(t, err)
	defer conn.Close()
	h := wire.Hello{Node: "old", Inc: 1}
	msg := append(append(wire.ProtoMagic[:], 0, 99), wire.AppendHello(nil, &h)...)
	require.NoError(t, wire.WriteMsg(conn, nil, msg))
	reply, err := wire.ReadMsg(conn, nil)
	require.NoError(t, err)
	d := wire.Dec{B: reply}
	require.Equal(t, wire.HsRefused, d.U8("status"))
	r := wire.ReadRefusal(&d)
	require.Equal(t, wire.CodeVersion, r.Code)
	require.Equal(t, "protocol version 99 not supported; this node speaks 5", r.Reason)
	waitFor(t, "logged", func() bool { return strings.Contains(logs.String(), "protocol version 99") })

	// A version 4 node (names of any size and bytes, no bad_name code)
	// is refused in its own format.
	v4, err := net.Dial("tcp", victim.Addr())
	require.NoError(t, err)
	defer v4.Close()
	require.NoError(t, wire.WriteMsg(v4, nil, append(append(wire.ProtoMagic[:], 0, 4), wire.AppendHello(nil, &h)...)))
	reply, err = wire.ReadMsg(v4, nil)
	require.NoError(t, err)
	d = wire.Dec{B: reply}
	require.Equal(t, wire.HsRefused, d.U8("status"))
	r = wire.ReadRefusal(&d)
	require.Equal(t, wire.CodeVersion, r.Code)
	require.Equal(t, "protocol version 4 not supported; this node speaks 5", r.Reason)

	// A version 2 node reads a refusal as status ‖ reason: it gets one.
	old, err := net.Dial("tcp", victim.Addr())
	require.NoError(t, err)
	defer old.Close()
	require.NoError(t, wire.WriteMsg(old, nil, append(append(wire.ProtoMagic[:], 0, 2), wire.AppendHello(nil, &h)...)))
	reply, err = wire.ReadMsg(old, nil)
	require.NoError(t, err)
	d = wire.Dec{B: reply}
	require.Equal(t, wire.HsRefused, d.U8("status"))
	require.Equal(t, "protocol version 2 not supported; this node speaks 5", d.Str("reason"))
	require.Empty(t, d.B)
}

// TestMissedHeartbeatsKillTheLink: a peer that says nothing after the
// handshake. On the caller's logical clock, stepped every quarter
// interval as its liveness loop would be, the link is kept while it has
// been silent for the whole window (HeartbeatMisses intervals) and
// closed one nanosecond later, failing the call pinned to it.
func TestMissedHeartbeatsKillTheLink(t *testing.T) {
	const iv, misses = 50 * time.Millisecond, 3
	clk := newLogicalClock()
	caller, callerNode, _ := startNodeAt(t, "caller", Config{Liveness: Liveness{HeartbeatInterval: iv, HeartbeatMisses: misses}}, clk)
	// A peer that completes the handshake and then says nothing at all:
	// a frozen process, as far as the caller can tell.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, err = wire.ServerHandshake(c, []byte(testCookie), wire.Hello{Node: "frozen", Inc: 9}, soon(), admitAll)
		if err == nil {
			accepted <- c
		}
	}()
	require.NoError(t, callerNode.Connect(context.Background(), "frozen", ln.Addr().String()))
	conn := <-accepted
	defer conn.Close()
	failed := make(chan error, 1)
	go func() {
		_, err := caller.Call(context.Background(), "frozen", "echo", &testpb.Echo{})
		failed <- err
	}()
	waitFor(t, "the call pending", func() bool { return callerNode.Stats().Pending == 1 })

	// Silent for exactly the window: kept. Each interval after the first
	// (a grace) counts one heartbeat missed.
	for range 4 * misses {
		clk.advance(iv / 4)
	}
	st := callerNode.Stats()
	require.Zero(t, st.LinksSilent, "closed before the window passed")
	require.Equal(t, uint64(misses-1), st.HeartbeatsMissed)
	select {
	case err := <-failed:
		t.Fatalf("the call failed before the window passed: %v", err)
	default:
	}

	clk.advance(time.Nanosecond)
	st = callerNode.Stats()
	require.Equal(t, uint64(1), st.LinksSilent, "one silent link, closed")
	require.Zero(t, st.LinksStalled)
	require.Equal(t, uint64(misses-1), st.HeartbeatsMissed)
	select {
	case err := <-failed:
		require.ErrorIs(t, err, actor.ErrNodeDown)
		require.Contains(t, err.Error(), "missed 3 heartbeats")
	case <-time.After(10 * time.Second):
		t.Fatal("the call pinned to the silent link did not fail")
	}
}

func TestTLSLinks(t *testing.T) {
	ca := newTestCA(t)
	_, a, _ := startNode(t, "a", ca.tlsConfig(t, "a"))
	b, bn, _ := startNode(t, "b", ca.tlsConfig(t, "b"))
	require.NoError(t, bn.Connect(context.Background(), "a", a.Addr()))
	healthy(t, b, "a")
	// A plain-TCP peer cannot talk to a TLS node.
	_, plain, _ := startNode(t, "plain", Config{HandshakeTimeout: time.Second})
	err := plain.Connect(context.Background(), "a", a.Addr())
	require.ErrorIs(t, err, actor.ErrUnreachable)
}

// recorder captures what a connection writes.
type recorder struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.b.Bytes()...)
}

type recConn struct {
	net.Conn
	rec *recorder
}

func (c *recConn) Write(p []byte) (int, error) {
	c.rec.mu.Lock()
	c.rec.b.Write(p)
	c.rec.mu.Unlock()
	return c.Conn.Write(p)
}

func TestAnnounceReachesPeersIncludingLateOnes(t *testing.T) {
	_, a, _ := startNode(t, "a", Config{})
	// watch returns the announces from a that n receives (duplicates are
	// harmless: a link that comes up after Announce repeats it).
	watch := func(n *Node) chan map[string]string {
		got := make(chan map[string]string, 8)
		n.AddHooks(Hooks{OnAnnounce: func(p PeerInfo, draining bool, meta map[string]string) {
			if p.Node == "a" {
				got <- meta
			}
		}})
		return got
	}
	recvMeta := func(got chan map[string]string, who string) map[string]string {
		select {
		case m := <-got:
			return m
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not get the announce", who)
			return nil
		}
	}
	_, b, _ := startNode(t, "b", Config{})
	gotB := watch(b)
	require.NoError(t, b.Connect(context.Background(), "a", a.Addr()))
	require.NoError(t, a.Announce(context.Background(), map[string]string{"svc.search": "2.1.0"}))
	require.Equal(t, "2.1.0", recvMeta(gotB, "b")["svc.search"])

	// A node that links afterwards learns it at link-up.
	_, c, _ := startNode(t, "c", Config{})
	gotC := watch(c)
	require.NoError(t, c.Connect(context.Background(), "a", a.Addr()))
	require.Equal(t, "2.1.0", recvMeta(gotC, "c")["svc.search"])
	info, ok := c.Peer("a")
	require.True(t, ok)
	require.Equal(t, "2.1.0", info.Meta["svc.search"])
}

func TestSendsInAClosingLinksBufferAreCountedNotLost(t *testing.T) {
	// Small socket buffers on both ends, so the kernel cannot absorb the
	// flood and the link's own buffer is what fills.
	sender, n, _ := startNode(t, "sender", Config{SendPolicy: actor.FailFast, LinkBufferBytes: 64 << 10, Network: smallBuffers{}})
	// A peer that completes the handshake and then never reads: the
	// kernel's buffers fill, then the link's own buffer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.(*net.TCPConn).SetReadBuffer(4096)
		if _, err := wire.ServerHandshake(c, []byte(testCookie), wire.Hello{Node: "stuck", Inc: 4}, soon(), admitAll); err == nil {
			accepted <- c
		}
	}()
	require.NoError(t, n.Connect(context.Background(), "stuck", ln.Addr().String()))
	conn := <-accepted
	payload := &testpb.Echo{Text: strings.Repeat("x", 1000)}
	target := actor.PID{Node: "stuck", Incarnation: 4, ID: 1}
	// Send until refusals last 50 ms: the writer is stuck and the link's
	// buffer holds frames.
	var refused int
	var since time.Time
	for i := 0; i < 10_000_000; i++ {
		if err := sender.TrySend(target, payload); err != nil {
			require.ErrorIs(t, err, actor.ErrOverloaded)
			refused++
			if since.IsZero() {
				since = time.Now()
			} else if time.Since(since) > 50*time.Millisecond {
				break
			}
		} else {
			since = time.Time{}
		}
	}
	require.False(t, since.IsZero(), "the link filled up and stayed full")
	before := sender.DeadLetters()
	conn.Close() // the link dies with frames still in its buffer
	waitFor(t, "the link down", func() bool { return n.Stats().Links == 0 })
	// The link's end counts each dropped frame, then makes its dead
	// letter: read the two once they agree (they must, within the wait).
	var dropped uint64
	waitFor(t, "every dropped send a counted dead letter", func() bool {
		dropped = n.Stats().DroppedUnsent
		return dropped > 0 && before+dropped == sender.DeadLetters()
	})
	require.Equal(t, uint64(refused), before, "every refused send was counted when it was refused")
}

// smallBuffers is TCP with a 4 KiB socket send buffer.
type smallBuffers struct{}

func (smallBuffers) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func (smallBuffers) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		_ = c.(*net.TCPConn).SetWriteBuffer(4096)
	}
	return c, err
}

type logSink = testutil.LogBuffer

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, cond)
}

// TestABusyReaderIsNotAMissedHeartbeat: b's reader waits delivering into
// a full mailbox while b's logical clock moves ten heartbeat intervals,
// stepped as its loop would: the link is busy, not silent, and stays.
// a's clock stands still (its liveness is not under test), so a sends b
// nothing meanwhile: were the busy reader not counted as heard from, the
// link would close after three intervals.
func TestABusyReaderIsNotAMissedHeartbeat(t *testing.T) {
	const iv, misses = 50 * time.Millisecond, 3
	hb := Config{Liveness: Liveness{HeartbeatInterval: iv, HeartbeatMisses: misses}}
	clk := newLogicalClock()
	bsys, b, _ := startNodeAt(t, "b", hb, clk)
	release := make(chan struct{})
	var got atomic.Int64
	// A mailbox of one that blocks: b's link reader waits in delivery.
	_, err := bsys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if _, ok := c.Message().(*testpb.Echo); ok {
			<-release
			got.Add(1)
		}
	}).WithMailbox(1, actor.Block), "slow")
	require.NoError(t, err)
	asys, a, _ := startNodeAt(t, "a", hb, newLogicalClock())
	require.NoError(t, a.Connect(context.Background(), "b", b.Addr()))
	for range 20 {
		asys.SendNamed("b", "slow", &testpb.Echo{})
	}
	l := onlyLink(t, b, "a")
	waitFor(t, "b's reader waits delivering", l.dispatching.Load)
	for range 40 {
		clk.advance(iv / 4)
		require.False(t, l.isClosed(), "a busy link was closed")
	}
	st := b.Stats()
	require.Zero(t, st.LinksSilent)
	require.Zero(t, st.HeartbeatsMissed)
	require.Zero(t, st.FailedByLiveness)
	close(release)
	waitFor(t, "all 20 delivered", func() bool { return got.Load() == 20 })
}

// A peer that floods pings and never reads: our reader blocks writing
// pongs (they are never dropped), then the peer falls silent. That is
// silence, not a busy reader: liveness must close the link.
//
// On the victim's logical clock: it stands still while the flood runs, so
// no link goes silent however long the flood takes; then it moves.
func TestAReaderBlockedOnPongsToAPeerThatStoppedReadingIsSilence(t *testing.T) {
	const iv, misses = 50 * time.Millisecond, 3
	clk := newLogicalClock()
	_, victim, logs := startNodeAt(t, "victim", Config{Liveness: Liveness{HeartbeatInterval: iv, HeartbeatMisses: misses}, LinkBufferBytes: 4096}, clk)
	conn := rawPeer(t, victim, testCookie)
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	pings := bytes.Repeat([]byte{0, 0, 0, 1, byte(wire.KindPing)}, 64<<10)
	// Write until the node stops taking pings (its reader is blocked on a
	// pong): the kernel's buffers fill and a write makes no progress for
	// its deadline (real time: the kernel's behaviour, not the node's).
	sent := 0
	for sent < 64<<20 {
		_ = conn.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := conn.Write(pings)
		sent += n
		if err != nil {
			break
		}
	}
	t.Logf("wrote %d KiB of pings without reading a pong", sent>>10)
	// Step the clock as the loop would until the link closes: once the
	// reader stops (on a pong it has no room for, or on bytes that no
	// longer come) it is silent, and a window later it is closed. Were a
	// reader blocked on a pong counted busy, no step would close it.
	waitFor(t, "the silent link closed", func() bool {
		clk.advance(iv / 4)
		return victim.Stats().LinksSilent == 1
	})
	waitFor(t, "the reason logged", func() bool { return strings.Contains(logs.String(), "missed 3 heartbeats") })
}
