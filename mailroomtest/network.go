package mailroomtest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/memnet"
)

// faults is the in-memory network of one Cluster and the faults set on
// it. Every node dials through its own view (nodeNet), so every
// connection is known by the pair of nodes it joins.
type faults struct {
	net *memnet.Network

	mu    sync.Mutex        // protects following
	addrs map[string]string // listen address -> node name
	side  map[string]int    // node -> partition side; absent: 0
	down  map[string]bool   // killed nodes
	delay map[[2]string]time.Duration
	conns map[*faultConn]struct{}
}

func newFaults() *faults {
	return &faults{
		net:   memnet.New(),
		addrs: make(map[string]string),
		side:  make(map[string]int),
		down:  make(map[string]bool),
		delay: make(map[[2]string]time.Duration),
		conns: make(map[*faultConn]struct{}),
	}
}

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// cutLocked reports whether a and b cannot reach each other.
func (f *faults) cutLocked(a, b string) bool {
	return f.down[a] || f.down[b] || f.side[a] != f.side[b]
}

// closeWhere closes every connection for which cut reports true, outside
// the lock.
func (f *faults) closeWhere(cut func(a, b string) bool) {
	f.mu.Lock()
	var doomed []*faultConn
	for c := range f.conns {
		if cut(c.from, c.to) {
			doomed = append(doomed, c)
			delete(f.conns, c)
		}
	}
	f.mu.Unlock()
	for _, c := range doomed {
		_ = c.Conn.Close()
	}
}

// nodeNet is one node's view of the network: a remote.Network.
type nodeNet struct {
	f    *faults
	name string
}

func (n *nodeNet) Listen(addr string) (net.Listener, error) { return n.f.net.Listen(addr) }

func (n *nodeNet) Dial(ctx context.Context, addr string) (net.Conn, error) {
	f := n.f
	f.mu.Lock()
	to, known := f.addrs[addr]
	cut := known && f.cutLocked(n.name, to)
	f.mu.Unlock()
	if cut {
		return nil, fmt.Errorf("mailroomtest: dial %s (%s) from %s: partitioned", addr, to, n.name)
	}
	c, err := f.net.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	fc := &faultConn{Conn: c, f: f, from: n.name, to: to}
	f.mu.Lock()
	if f.cutLocked(n.name, to) { // cut while dialling
		f.mu.Unlock()
		_ = c.Close()
		return nil, fmt.Errorf("mailroomtest: dial %s (%s) from %s: partitioned", addr, to, n.name)
	}
	f.conns[fc] = struct{}{}
	f.mu.Unlock()
	return fc, nil
}

// faultConn is the dialling end of a link between two nodes. Closing it
// closes the link both ways (the accepting end reads EOF), so it is the
// only end the faults need to hold.
type faultConn struct {
	net.Conn
	f        *faults
	from, to string
}

func (c *faultConn) lag() time.Duration {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return c.f.delay[pair(c.from, c.to)]
}

// Write waits the link's delay first, so what a node sends over it
// arrives that much later.
func (c *faultConn) Write(p []byte) (int, error) {
	if d := c.lag(); d > 0 {
		time.Sleep(d)
	}
	return c.Conn.Write(p)
}

// Read waits the link's delay after the bytes came, for the direction
// back to the dialer.
func (c *faultConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if d := c.lag(); d > 0 && n > 0 {
		time.Sleep(d)
	}
	return n, err
}

func (c *faultConn) Close() error {
	c.f.mu.Lock()
	delete(c.f.conns, c)
	c.f.mu.Unlock()
	return c.Conn.Close()
}
