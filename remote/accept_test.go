package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoffDoublesToItsCeilingAndResets(t *testing.T) {
	b := backoff{min: acceptBackoffMin, max: acceptBackoffMax}
	var got []time.Duration
	for range 10 {
		got = append(got, b.next())
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second}, got)
	b.reset()
	require.Equal(t, 5*ms, b.next())
}

func TestLogLimiterLetsABurstThroughPerIntervalAndCountsTheRest(t *testing.T) {
	r := logLimiter{every: time.Second, burst: 2}
	t0 := time.Unix(1000, 0)
	step := func(at time.Duration) (bool, int) { return r.allow(t0.Add(at)) }
	ok, n := step(0)
	require.True(t, ok)
	require.Zero(t, n)
	ok, _ = step(10 * time.Millisecond)
	require.True(t, ok)
	for i := range 5 {
		ok, _ = step(time.Duration(20+i) * time.Millisecond)
		require.False(t, ok)
	}
	ok, n = step(time.Second)
	require.True(t, ok, "a new interval")
	require.Equal(t, 5, n, "the line reports the 5 suppressed")
	ok, n = step(time.Second + time.Millisecond)
	require.True(t, ok)
	require.Zero(t, n)
}

// dialFrom connects to addr from the local IP ip (any address of
// 127.0.0.0/8 is loopback on Linux): a distinct remote IP for the node.
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByPeer reports whether the node has closed c (a read ends with
// something other than a timeout).
func closedByPeer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func countClosed(conns []net.Conn) int {
	n := 0
	for _, c := range conns {
		if closedByPeer(c) {
			n++
		}
	}
	return n
}

// TestAPreAuthFloodFromOneIPIsCapped: 100 connections from one address
// that never say a word. The node runs at most MaxHandshakesPerIP
// handshakes for that address (one goroutine each), closes the other
// connections at once and counts them; a peer from another address
// links and is served meanwhile; the stalled ones end at their deadline.
func TestAPreAuthFloodFromOneIPIsCapped(t *testing.T) {
	const perIP, flood = 8, 100
	_, victim, logs := startNode(t, "victim", Config{Limits: Limits{MaxHandshakes: 64, MaxHandshakesPerIP: perIP}, HandshakeTimeout: 3 * time.Second})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	healthy(t, good, "victim")
	waitFor(t, "the good link's handshake over", func() bool { return victim.Stats().Handshaking == 0 })
	base := runtime.NumGoroutine()

	conns := make([]net.Conn, flood)
	for i := range conns {
		conns[i] = dialFrom(t, "127.0.0.2", victim.Addr())
	}
	waitFor(t, "the excess shed", func() bool { return victim.Stats().HandshakesShed == flood-perIP })
	st := victim.Stats()
	require.Equal(t, perIP, st.Handshaking)
	grew := runtime.NumGoroutine() - base
	t.Logf("%d connections from one IP: %d handshakes in progress, %d shed, goroutines +%d", flood, st.Handshaking, st.HandshakesShed, grew)
	require.LessOrEqual(t, grew, perIP+4, "one goroutine per handshake in progress, none for the shed")
	waitFor(t, "the shed connections closed", func() bool { return countClosed(conns) == flood-perIP })

	// A peer from another address links now and is served.
	late, lateNode, _ := startNode(t, "late", Config{})
	require.NoError(t, lateNode.Connect(context.Background(), "victim", victim.Addr()))
	healthy(t, late, "victim")
	healthy(t, good, "victim")

	// The stalled handshakes end at their deadline.
	waitFor(t, "the stalled handshakes closed", func() bool { return countClosed(conns) == flood })
	// The client sees the close a moment before the handshake's goroutine
	// gives its slot back.
	waitFor(t, "no handshake in progress", func() bool { return victim.Stats().Handshaking == 0 })
	lines := strings.Count(logs.String(), "too many handshakes in progress")
	require.LessOrEqual(t, lines, 5, "shedding is logged at most once a second")
}

// TestAPreAuthFloodFromManyIPsIsCappedNodeWide: connections from four
// addresses, each under its own cap, reach the node-wide cap: the node
// runs MaxHandshakes handshakes and sheds the rest; a linked peer is
// served meanwhile, and once the stalled handshakes time out a new peer
// links.
func TestAPreAuthFloodFromManyIPsIsCappedNodeWide(t *testing.T) {
	const max, perIP = 16, 10
	_, victim, _ := startNode(t, "victim", Config{Limits: Limits{MaxHandshakes: max, MaxHandshakesPerIP: perIP}, HandshakeTimeout: 2 * time.Second})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	waitFor(t, "the good link's handshake over", func() bool { return victim.Stats().Handshaking == 0 })
	base := runtime.NumGoroutine()
	var conns []net.Conn
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
		for range perIP {
			conns = append(conns, dialFrom(t, ip, victim.Addr()))
		}
	}
	waitFor(t, "the excess shed", func() bool { return victim.Stats().HandshakesShed == uint64(len(conns)-max) })
	require.Equal(t, max, victim.Stats().Handshaking)
	grew := runtime.NumGoroutine() - base
	t.Logf("%d connections from 4 IPs: %d in progress, %d shed, goroutines +%d", len(conns), max, len(conns)-max, grew)
	require.LessOrEqual(t, grew, max+4)
	healthy(t, good, "victim") // a linked peer is served meanwhile
	waitFor(t, "the stalled handshakes closed", func() bool { return countClosed(conns) == len(conns) })
	late, lateNode, _ := startNode(t, "late", Config{})
	require.NoError(t, lateNode.Connect(context.Background(), "victim", victim.Addr()))
	healthy(t, late, "victim")
}

// TestAStalledTLSClientIsClosedAfterOneHandshakeTimeout: TLS and the
// hello share one deadline. A client (with a valid certificate) that
// takes most of the timeout to finish TLS and then says nothing is closed
// one HandshakeTimeout after it connected, not two (version 2 gave the
// hello a fresh timeout after TLS). A client that says nothing at all
// gives its slot back at the first-byte deadline, a fifth of the timeout.
func TestAStalledTLSClientIsClosedAfterOneHandshakeTimeout(t *testing.T) {
	const timeout = time.Second
	ca := newTestCA(t)
	cfg := ca.tlsConfig(t, "victim")
	cfg.HandshakeTimeout = timeout
	_, victim, _ := startNode(t, "victim", cfg)
	_, cli := ca.configs(t, "slow")
	cli.ServerName = "victim"

	lifetime := func(slowTLS bool) time.Duration {
		start := time.Now()
		conn, err := net.Dial("tcp", victim.Addr())
		require.NoError(t, err)
		defer conn.Close()
		c := conn
		if slowTLS {
			// The attacker's own pace, not synchronisation: it starts TLS
			// at once and finishes it late in the handshake window.
			tc := tls.Client(&lateWrites{Conn: conn, delay: timeout * 6 / 10}, cli)
			require.NoError(t, tc.Handshake())
			c = tc
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var b [1]byte
		_, err = c.Read(b[:])
		require.Error(t, err)
		require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the node closed the connection")
		return time.Since(start)
	}
	silent := lifetime(false)
	slow := lifetime(true)
	t.Logf("HandshakeTimeout %v: a silent client lived %v, a client that finished TLS late and stalled %v", timeout, silent.Round(time.Millisecond), slow.Round(time.Millisecond))
	require.Less(t, silent, timeout*4/10, "the first-byte deadline")
	require.Less(t, slow, timeout*14/10, "one deadline for TLS and the hello")
	require.GreaterOrEqual(t, slow, timeout*9/10)
}

// lateWrites writes its first write at once and waits delay before the
// next: a TLS client that sends its hello and finishes late.
type lateWrites struct {
	net.Conn
	delay  time.Duration
	writes int
}

func (c *lateWrites) Write(p []byte) (int, error) {
	if c.writes++; c.writes == 2 {
		time.Sleep(c.delay) // the attacker's pace
	}
	return c.Conn.Write(p)
}

// flakyNetwork is TCP whose listener fails every Accept while failing is
// set, as at the file descriptor limit (EMFILE: the connection stays in
// the backlog).
type flakyNetwork struct {
	TCP
	failing atomic.Bool
	accepts atomic.Int64
}

func (f *flakyNetwork) Listen(addr string) (net.Listener, error) {
	ln, err := f.TCP.Listen(addr)
	return &flakyListener{Listener: ln, f: f}, err
}

type flakyListener struct {
	net.Listener
	f *flakyNetwork
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.f.accepts.Add(1)
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	if l.f.failing.Load() {
		return nil, emfile
	}
	c, err := l.Listener.Accept()
	if err == nil && l.f.failing.Load() {
		c.Close() // it woke the loop up
		return nil, emfile
	}
	return c, err
}

var suppressedLine = regexp.MustCompile(`accept failed.*suppressed=[1-9]`)

// TestAcceptErrorsBackOffWithBoundedLogs: at the fd limit every accept
// fails at once; version 2 retried without pause (4.57 M log lines in
// 14 s). The loop must back off (5 ms doubling to 1 s), log at most a
// line a second with the count suppressed, and serve again as soon as
// accepts work.
func TestAcceptErrorsBackOffWithBoundedLogs(t *testing.T) {
	fn := &flakyNetwork{}
	_, victim, logs := startNode(t, "victim", Config{Network: fn})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))

	fn.failing.Store(true)
	start := time.Now()
	wake, err := net.Dial("tcp", victim.Addr())
	require.NoError(t, err)
	defer wake.Close()
	// 9 errors take 5+10+...+640 = 1275 ms of backoff, at least.
	waitFor(t, "9 accept errors", func() bool { return victim.Stats().AcceptErrors >= 9 })
	elapsed := time.Since(start)
	errs := victim.Stats().AcceptErrors
	require.GreaterOrEqual(t, elapsed, 1270*time.Millisecond, "the loop backed off")
	require.LessOrEqual(t, errs, uint64(9+elapsed/time.Second), "no more than the backoff allows")
	waitFor(t, "a line with the count suppressed", func() bool { return suppressedLine.MatchString(logs.String()) })
	logged := time.Since(start)
	lines := strings.Count(logs.String(), "accept failed")
	t.Logf("%d accept errors in %v; %d log lines in %v", errs, elapsed.Round(time.Millisecond), lines, logged.Round(time.Millisecond))
	require.LessOrEqual(t, lines, 1+int(logged/time.Second), "at most a line a second")
	healthy(t, good, "victim") // linked peers are not affected

	fn.failing.Store(false)
	late, lateNode, _ := startNode(t, "late", Config{})
	require.NoError(t, lateNode.Connect(context.Background(), "victim", victim.Addr()))
	healthy(t, late, "victim")
}
