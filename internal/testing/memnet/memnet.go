package memnet

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// Network holds the listeners of one test.
type Network struct {
	size int // buffered connections: bytes per direction; 0: net.Pipe

	mu     sync.Mutex // protects following
	ls     map[string]*listener
	next   int
	dialed map[string][]*Conn // buffered: the dialing ends, by address
}

// New returns an empty network whose connections are net.Pipe pairs.
func New() *Network { return &Network{ls: make(map[string]*listener)} }

// Listen listens on addr; "host:0" picks a free port.
func (n *Network) Listen(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if port == "0" {
		n.next++
		port = fmt.Sprint(10000 + n.next)
	}
	addr = net.JoinHostPort(host, port)
	if _, taken := n.ls[addr]; taken {
		return nil, fmt.Errorf("memnet: %s in use", addr)
	}
	l := &listener{n: n, addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
	n.ls[addr] = l
	return l, nil
}

// Dial connects to a listener.
func (n *Network) Dial(ctx context.Context, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.ls[addr]
	n.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("memnet: dial %s: connection refused", addr)
	}
	var client, server net.Conn
	if n.size > 0 {
		c, s := bufferedPair(n.size, addr)
		n.mu.Lock()
		if n.dialed == nil {
			n.dialed = make(map[string][]*Conn)
		}
		n.dialed[addr] = append(n.dialed[addr], c)
		n.mu.Unlock()
		client, server = c, s
	} else {
		client, server = net.Pipe()
	}
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, fmt.Errorf("memnet: dial %s: connection refused", addr)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type listener struct {
	n     *Network
	addr  string
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.n.mu.Lock()
		delete(l.n.ls, l.addr)
		l.n.mu.Unlock()
	})
	return nil
}

func (l *listener) Addr() net.Addr { return addr(l.addr) }

type addr string

func (a addr) Network() string { return "memnet" }
func (a addr) String() string  { return string(a) }
