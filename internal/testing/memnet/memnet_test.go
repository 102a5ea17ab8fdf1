package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pair dials one buffered connection and returns its two ends.
func pair(t *testing.T, size int) (client *Conn, server net.Conn) {
	t.Helper()
	n := NewBuffered(size)
	ln, err := n.Listen("b:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := n.Dial(context.Background(), ln.Addr().String())
	require.NoError(t, err)
	s := <-accepted
	require.NotNil(t, s)
	t.Cleanup(func() { c.Close(); s.Close() })
	require.Equal(t, []*Conn{c.(*Conn)}, n.Conns(ln.Addr().String()), "the dialing end is listed")
	return c.(*Conn), s
}

// readAll reads from c until it has want bytes or an error.
func readN(t *testing.T, c net.Conn, want int) []byte {
	t.Helper()
	got := make([]byte, want)
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	return got
}

func TestAWriteReturnsOnceBufferedAndBlocksWhenFull(t *testing.T) {
	c, s := pair(t, 8)
	n, err := c.Write([]byte("12345678"))
	require.NoError(t, err, "a write that fits returns at once, unread")
	require.Equal(t, 8, n)
	require.Equal(t, 8, c.Buffered())

	done := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte("abcdefghijkl"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a write into a full buffer returned: %v", err)
	default:
	}
	require.Equal(t, "12345678", string(readN(t, s, 8)))
	require.Equal(t, "abcdefghijkl", string(readN(t, s, 12)), "the rest goes through as the reader makes room")
	require.NoError(t, <-done)
}

func TestAHeldEndDeliversInOrderOnRelease(t *testing.T) {
	c, s := pair(t, 1<<10)
	_, err := c.Write([]byte("one "))
	require.NoError(t, err)
	c.Hold()
	_, err = c.Write([]byte("two "))
	require.NoError(t, err, "held bytes are buffered: the write returns")
	require.NoError(t, c.Close(), "and the close waits behind them")

	require.Equal(t, "one ", string(readN(t, s, 4)), "what was written before the hold arrives")
	require.NoError(t, s.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err = s.Read(make([]byte, 8))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "nothing held arrives, not even the close")
	require.NoError(t, s.SetReadDeadline(time.Time{}))

	// The other direction still carries bytes while the close is held;
	// they are discarded, as for a peer that will never read them.
	_, err = s.Write([]byte("ignored"))
	require.NoError(t, err)

	c.Release()
	require.Equal(t, "two ", string(readN(t, s, 4)))
	_, err = s.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the close arrives after the data")
}

func TestCloseWriteIsAHalfClose(t *testing.T) {
	c, s := pair(t, 1<<10)
	_, err := c.Write([]byte("last"))
	require.NoError(t, err)
	require.NoError(t, c.CloseWrite())
	_, err = c.Write([]byte("x"))
	require.Error(t, err, "nothing is written after a half-close")

	got, err := io.ReadAll(s)
	require.NoError(t, err)
	require.Equal(t, "last", string(got), "the other side reads what was written, then EOF")

	_, err = s.Write([]byte("reply"))
	require.NoError(t, err)
	require.Equal(t, "reply", string(readN(t, c, 5)), "the half-closed end still reads")
}

func TestDeadlinesEndBlockedReadsAndWrites(t *testing.T) {
	c, s := pair(t, 4)
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(20*time.Millisecond)))
	n, err := c.Write([]byte("123456"))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "a timeout, as net.Pipe's")
	require.Equal(t, 4, n, "what fitted was written")

	done := make(chan error, 1)
	go func() {
		if _, err := s.Read(make([]byte, 16)); err != nil {
			done <- err
			return
		}
		_, err := s.Read(make([]byte, 16))
		done <- err
	}()
	// A deadline set while a read waits ends it.
	testutil.Eventually(t, "the buffer is read", func() bool { return c.Buffered() == 0 })
	require.NoError(t, s.SetReadDeadline(time.Now()))
	require.ErrorIs(t, <-done, os.ErrDeadlineExceeded)
}

func TestAClosedEndFailsItsOwnReadsAndWrites(t *testing.T) {
	c, s := pair(t, 1<<10)
	require.NoError(t, s.Close())
	_, err := s.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.ErrClosedPipe)
	_, err = s.Write([]byte("x"))
	require.ErrorIs(t, err, io.ErrClosedPipe)
	_, err = c.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the other end reads the close")
	_, err = c.Write([]byte("x"))
	require.NoError(t, err, "and its writes are discarded")
	require.Zero(t, c.Buffered())
}

func TestConnsListsTheDialingEndsInOrder(t *testing.T) {
	n := NewBuffered(64)
	ln, err := n.Listen("b:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	var dialed []net.Conn
	for range 3 {
		c, err := n.Dial(context.Background(), ln.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		dialed = append(dialed, c)
	}
	conns := n.Conns(ln.Addr().String())
	require.Len(t, conns, 3)
	for i := range dialed {
		require.Same(t, dialed[i], net.Conn(conns[i]))
	}
	require.Empty(t, New().Conns(ln.Addr().String()), "a pipe network lists none")
}
