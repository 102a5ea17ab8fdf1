package remote

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// TestFramesOfAWriteCutShortAreCounted: the link's writer hands its
// whole buffer to one write; when the connection breaks during that
// write, the frames the kernel never took must be counted like those
// still in the buffer (dead letters), not lost silently. Found by the
// chaos suite: a native link to a node killed under a send flood lost up
// to a whole buffer of sends (4 MiB) without a trace. Every accepted send
// is read by the peer, counted, or one of those the kernel held when the
// connection died.
func TestFramesOfAWriteCutShortAreCounted(t *testing.T) {
	sender, n, _ := startNode(t, "sender", Config{SendPolicy: actor.FailFast, LinkBufferBytes: 256 << 10, Network: smallBuffers{}, Liveness: Liveness{HeartbeatInterval: time.Minute}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.(*net.TCPConn).SetReadBuffer(32 << 10)
		if _, err := wire.ServerHandshake(c, []byte(testCookie), wire.Hello{Node: "peer", Inc: 4}, soon(), admitAll); err == nil {
			accepted <- c
		}
	}()
	require.NoError(t, n.Connect(context.Background(), "peer", ln.Addr().String()))
	conn := <-accepted
	defer conn.Close()
	payload := &testpb.Echo{Text: strings.Repeat("x", 1000)}
	target := actor.PID{Node: "peer", Incarnation: 4, ID: 1}
	var sent int
	// fill sends until the link's buffer stays full for 50 ms.
	fill := func() {
		var since time.Time
		for {
			if err := sender.TrySend(target, payload); err != nil {
				require.ErrorIs(t, err, actor.ErrOverloaded)
				if since.IsZero() {
					since = time.Now()
				} else if time.Since(since) > 50*time.Millisecond {
					return
				}
				continue
			}
			sent++
			since = time.Time{}
		}
	}
	fill()
	// Read more than a buffer of frames, so the writer finishes its first write and
	// takes a full buffer into the next one; then stop reading.
	var read, got, frameSize int
	for read < 300<<10 {
		var hdr [5]byte
		_, err := io.ReadFull(conn, hdr[:])
		require.NoError(t, err)
		body := make([]byte, binary.BigEndian.Uint32(hdr[:4])-1)
		_, err = io.ReadFull(conn, body)
		require.NoError(t, err)
		read += 5 + len(body)
		if wire.Kind(hdr[4]) == wire.KindSend {
			got++
			frameSize = 5 + len(body)
		}
	}
	fill() // the writer is blocked in a big write again, the buffer full
	before := n.Stats().DroppedUnsent
	l := (*transport)(n).current("peer").outLink()
	// What the kernel holds between the two: the only sends that may be
	// lost without a count, once the writer is blocked and they stop moving.
	queued, since := kernelQueued(t, conn, l.conn), time.Now()
	waitFor(t, "the kernel queues to settle", func() bool {
		if q := kernelQueued(t, conn, l.conn); q != queued {
			queued, since = q, time.Now()
		}
		return time.Since(since) > 50*time.Millisecond
	})
	// A writer descheduled for the settling window (a loaded machine) may
	// still have moved bytes into the kernel since: read it again, last.
	queued = max(queued, kernelQueued(t, conn, l.conn))
	_ = conn.(*net.TCPConn).SetLinger(0)
	conn.Close() // an RST: the write in progress fails
	select {     // reader and writer done: every count made
	case <-l.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the link did not end")
	}
	counted := int(n.Stats().DroppedUnsent - before)
	unaccounted := sent - got - counted
	inKernel := (queued+frameSize-1)/frameSize + 1 // a frame cut in two counts once
	t.Logf("sent %d, read by the peer %d, counted %d, unaccounted %d; the kernel held %d bytes (%d frames)", sent, got, counted, unaccounted, queued, inKernel)
	require.GreaterOrEqual(t, unaccounted, 0)
	require.LessOrEqual(t, unaccounted, inKernel, "sends lost without a dead letter")
}

// kernelQueued is what the kernel holds on the loopback connection
// between peer and sender: unread bytes at peer, unsent or unacked bytes
// at sender (from /proc/net/tcp).
func kernelQueued(t *testing.T, peer, sender net.Conn) int {
	t.Helper()
	// Asked of each socket (not read from /proc/net/tcp, which is read in
	// chunks and can skip a line while other tests open and close
	// sockets): what the peer's socket holds unread, and what the sender's
	// holds unsent or unacknowledged.
	return sockQueue(t, peer, syscall.TIOCINQ) + sockQueue(t, sender, syscall.TIOCOUTQ)
}

// sockQueue asks the kernel for one of a socket's queue lengths (bytes).
func sockQueue(t *testing.T, c net.Conn, req uintptr) int {
	t.Helper()
	sc, ok := c.(syscall.Conn)
	require.True(t, ok, "%T is not a socket", c)
	raw, err := sc.SyscallConn()
	require.NoError(t, err)
	var n int32
	var errno syscall.Errno
	require.NoError(t, raw.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(unsafe.Pointer(&n)))
	}))
	require.Zero(t, errno)
	return int(n)
}
