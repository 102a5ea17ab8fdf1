package faultnet

import (
	"bytes"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer echoes every connection until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	conns := make(chan net.Conn, 64)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		close(conns)
		for c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

func proxyTo(t *testing.T, upstream string) *Proxy {
	t.Helper()
	p, err := Listen(upstream)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// readN reads exactly n bytes or fails after the timeout.
func readN(c net.Conn, n int, timeout time.Duration) ([]byte, error) {
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	defer c.SetReadDeadline(time.Time{})
	b := make([]byte, n)
	_, err := io.ReadFull(c, b)
	return b, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestForwards(t *testing.T) {
	p := proxyTo(t, echoServer(t))
	c := dial(t, p)
	_, err := c.Write([]byte("hello"))
	require.NoError(t, err)
	got, err := readN(c, 5, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "hello", string(got))
	st := p.Stats()
	require.Equal(t, uint64(5), st.BytesUp)
	require.Equal(t, uint64(5), st.BytesDown)
}

func TestBlackholeHoldsAndHealDeliversInOrder(t *testing.T) {
	p := proxyTo(t, echoServer(t))
	c := dial(t, p)
	_, err := c.Write([]byte("a"))
	require.NoError(t, err)
	_, err = readN(c, 1, 5*time.Second)
	require.NoError(t, err)

	p.Blackhole(Both)
	var sent bytes.Buffer
	for i := range 100 {
		b := []byte{byte(i)}
		sent.Write(b)
		_, err := c.Write(b)
		require.NoError(t, err)
	}
	// The bounded wait is the behaviour under test: nothing may pass.
	_, err = readN(c, 1, 200*time.Millisecond)
	require.True(t, isTimeout(err), "nothing passes a blackhole: %v", err)
	p.Heal()
	got, err := readN(c, 100, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, sent.Bytes(), got)
}

func TestBlackholedUpDelaysTheDial(t *testing.T) {
	p := proxyTo(t, echoServer(t))
	p.Blackhole(Up)
	c := dial(t, p)
	_, err := c.Write([]byte("x"))
	require.NoError(t, err)
	_, err = readN(c, 1, 200*time.Millisecond)
	require.True(t, isTimeout(err))
	require.Zero(t, p.Stats().Dialed)
	p.Pass(Up)
	_, err = readN(c, 1, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, uint64(1), p.Stats().Dialed)
}

func TestOneWayCloseTravelsInItsDirection(t *testing.T) {
	// Upstream: a server that closes every connection after reading "bye".
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = readN(c, 3, 10*time.Second)
		c.Close()
	}()
	p := proxyTo(t, ln.Addr().String())
	c := dial(t, p)
	// Up still passes, Down is cut: the upstream's FIN is held.
	p.Blackhole(Down)
	_, err = c.Write([]byte("bye"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return p.Stats().BytesUp == 3 }, 5*time.Second, time.Millisecond)
	_, err = readN(c, 1, 300*time.Millisecond)
	require.True(t, isTimeout(err), "the close must not cross a blackholed direction: %v", err)
	p.Pass(Down)
	_, err = readN(c, 1, 5*time.Second)
	require.ErrorIs(t, err, io.EOF)
}

func TestDelay(t *testing.T) {
	p := proxyTo(t, echoServer(t))
	c := dial(t, p)
	p.Delay(Both, 50*time.Millisecond)
	start := time.Now()
	_, err := c.Write([]byte("ping"))
	require.NoError(t, err)
	_, err = readN(c, 4, 5*time.Second)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
}

func TestResetSendsRST(t *testing.T) {
	p := proxyTo(t, echoServer(t))
	c := dial(t, p)
	_, err := c.Write([]byte("a"))
	require.NoError(t, err)
	_, err = readN(c, 1, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, 1, p.Reset())
	_, err = readN(c, 1, 5*time.Second)
	require.Error(t, err)
	require.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF), "got %v", err)
	// New connections work.
	c2 := dial(t, p)
	_, err = c2.Write([]byte("b"))
	require.NoError(t, err)
	_, err = readN(c2, 1, 5*time.Second)
	require.NoError(t, err)
}

func TestCloseEndsHeldConnections(t *testing.T) {
	p := proxyTo(t, echoServer(t))
	p.Blackhole(Both)
	c := dial(t, p)
	_, err := c.Write([]byte("held"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return p.Stats().Open == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, p.Close())
	_, err = readN(c, 1, 5*time.Second)
	require.Error(t, err)
	require.False(t, isTimeout(err))
}
