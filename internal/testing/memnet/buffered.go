package memnet

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// NewBuffered returns a network whose connections buffer up to size
// bytes in each direction, as a kernel's socket buffers do: a write
// returns once its bytes are buffered and blocks while the buffer is
// full. They support CloseWrite (the other side reads what was written,
// then io.EOF), deadlines (os.ErrDeadlineExceeded, as net.Pipe), and
// Hold.
func NewBuffered(size int) *Network {
	n := New()
	n.size = max(size, 1)
	return n
}

// Conns are the dialing ends of the connections dialed to addr, in the
// order they were dialed (buffered networks only).
func (n *Network) Conns(addr string) []*Conn {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Conn(nil), n.dialed[addr]...)
}

// Conn is one end of a buffered connection.
type Conn struct {
	in, out    *half // what this end reads, and what it writes
	local, rem addr
	once       sync.Once
}

var _ net.Conn = (*Conn)(nil)

func bufferedPair(size int, to string) (client, server *Conn) {
	up, down := newHalf(size), newHalf(size)
	client = &Conn{in: down, out: up, local: "memnet-client", rem: addr(to)}
	server = &Conn{in: up, out: down, local: addr(to), rem: "memnet-client"}
	return client, server
}

// half is one direction of a connection: one end writes into it, the
// other reads from it.
type half struct {
	size int

	mu      sync.Mutex // protects following
	data    []byte     // delivered, not yet read
	held    []byte     // written while held, not yet delivered
	holding bool
	fin     bool // the writer closed or half-closed, delivered behind data
	finHeld bool // such a close, waiting behind held bytes
	wclosed bool // the writer end closed or half-closed: its writes fail
	rclosed bool // the reader end closed: writes are discarded
	rdl     time.Time
	wdl     time.Time
	changed chan struct{} // closed and replaced at every change
}

func newHalf(size int) *half { return &half{size: size, changed: make(chan struct{})} }

// broadcast wakes every waiter. Under mu.
func (h *half) broadcast() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// wait releases mu until the half changes or dl passes. Under mu.
func (h *half) wait(dl time.Time) {
	ch := h.changed
	var expired <-chan time.Time
	if !dl.IsZero() {
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		expired = t.C
	}
	h.mu.Unlock()
	select {
	case <-ch:
	case <-expired:
	}
	h.mu.Lock()
}

func passed(dl time.Time) bool { return !dl.IsZero() && !time.Now().Before(dl) }

// Read reads what the other end wrote and was delivered; io.EOF once
// its close or half-close has been delivered and everything before it
// read.
func (c *Conn) Read(p []byte) (int, error) {
	h := c.in
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		switch {
		case h.rclosed:
			return 0, io.ErrClosedPipe
		case len(h.data) > 0:
			k := copy(p, h.data)
			h.data = h.data[k:]
			if len(h.data) == 0 {
				h.data = nil
			}
			h.broadcast()
			return k, nil
		case h.fin:
			return 0, io.EOF
		case passed(h.rdl):
			return 0, os.ErrDeadlineExceeded
		}
		h.wait(h.rdl)
	}
}

// Write buffers p, waiting while the buffer is full. Bytes written to an
// end that has closed are discarded, as the bytes a kernel accepted for a
// peer that will never read them.
func (c *Conn) Write(p []byte) (int, error) {
	h := c.out
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for {
		switch {
		case h.wclosed:
			return n, io.ErrClosedPipe
		case h.rclosed:
			return len(p), nil
		case n == len(p):
			return n, nil
		}
		if room := h.size - len(h.data) - len(h.held); room > 0 {
			k := min(room, len(p)-n)
			if h.holding {
				h.held = append(h.held, p[n:n+k]...)
			} else {
				h.data = append(h.data, p[n:n+k]...)
			}
			n += k
			h.broadcast()
			continue
		}
		if passed(h.wdl) {
			return n, os.ErrDeadlineExceeded
		}
		h.wait(h.wdl)
	}
}

// endWrite closes the writing side of h: the reader gets io.EOF after
// what was written (held, it waits behind the held bytes).
func (h *half) endWrite() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.wclosed {
		return
	}
	h.wclosed = true
	if h.holding {
		h.finHeld = true
	} else {
		h.fin = true
	}
	h.broadcast()
}

// Close closes both directions of this end: the other end reads what
// this one wrote, then io.EOF; what it writes from now on is discarded.
func (c *Conn) Close() error {
	c.once.Do(func() {
		c.out.endWrite()
		h := c.in
		h.mu.Lock()
		h.rclosed = true
		h.data, h.held = nil, nil
		h.broadcast()
		h.mu.Unlock()
	})
	return nil
}

// CloseWrite half-closes this end: the other end reads what was written,
// then io.EOF; this end can still read.
func (c *Conn) CloseWrite() error {
	c.out.endWrite()
	return nil
}

// Hold stops delivering what this end writes: its bytes, and then its
// close or half-close, wait in order (writes block once the buffer is
// full), as a blackholed direction of internal/testing/faultnet does. Release
// delivers them.
func (c *Conn) Hold() {
	h := c.out
	h.mu.Lock()
	h.holding = true
	h.mu.Unlock()
}

// Release delivers what Hold kept, in order, and what is written from
// now on.
func (c *Conn) Release() {
	h := c.out
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holding = false
	h.data = append(h.data, h.held...)
	h.held = nil
	if h.finHeld {
		h.finHeld, h.fin = false, true
	}
	h.broadcast()
}

// Buffered is the bytes this end wrote that the other has not read yet,
// held ones included.
func (c *Conn) Buffered() int {
	h := c.out
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.data) + len(h.held)
}

func (c *Conn) LocalAddr() net.Addr  { return c.local }
func (c *Conn) RemoteAddr() net.Addr { return c.rem }

func (c *Conn) SetDeadline(t time.Time) error {
	_ = c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *Conn) SetReadDeadline(t time.Time) error {
	h := c.in
	h.mu.Lock()
	h.rdl = t
	h.broadcast()
	h.mu.Unlock()
	return nil
}

func (c *Conn) SetWriteDeadline(t time.Time) error {
	h := c.out
	h.mu.Lock()
	h.wdl = t
	h.broadcast()
	h.mu.Unlock()
	return nil
}
