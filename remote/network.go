package remote

import (
	"context"
	"net"
)

// Network is how a node listens and dials. The default is TCP; tests use
// an in-memory network (internal/testing/memnet) to run the same code without
// sockets.
type Network interface {
	Listen(addr string) (net.Listener, error)
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

// TCP is the default Network.
type TCP struct{ Dialer net.Dialer }

// Listen listens on a TCP address.
func (t *TCP) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

// Dial dials a TCP address.
func (t *TCP) Dial(ctx context.Context, addr string) (net.Conn, error) {
	return t.Dialer.DialContext(ctx, "tcp", addr)
}
