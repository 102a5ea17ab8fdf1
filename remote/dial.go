package remote

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/wire"
)

// dialer is how this node reaches a peer: it dials and authenticates
// links (native and pool), names each link it dials (linkIDs: the ids a
// fence names, supersede.go), runs one dial per node name at a time
// (slot.dialing: a crowd of senders shares one attempt) and reports failed
// dials, rate-limited, per peer (log). What it dials it hands to the node
// to register (attach).
type dialer struct {
	node    *Node
	linkIDs atomic.Uint64 // ids of the links this node dials
	log     *dialLog      // failed dials, per peer
}

// hello is this node's hello for a link of role to worker; a dial
// (wantNode set) names the link with a fresh id.
func (d *dialer) hello(role uint8, worker uint32, wantNode string, wantInc uint64) wire.Hello {
	n := d.node
	h := wire.Hello{Role: role, Worker: worker, Node: n.sys.Name(), Inc: n.sys.Incarnation(), PoolSize: uint32(n.cfg.poolWorkers()), WantNode: wantNode, WantInc: wantInc, Addr: n.addr}
	if wantNode != "" { // a dial: name the link (supersede.go)
		h.LinkID = d.linkIDs.Add(1)
	}
	return h
}

// to connects to addr as h's role and authenticates: DialTimeout bounds
// the connection, then one HandshakeTimeout deadline bounds TLS and the
// hello exchange; ctx ends either. Every failure after the connection
// wraps ErrHandshake. An authenticated refusal saying this incarnation
// was declared dead stops the node (onRefused).
func (d *dialer) to(ctx context.Context, addr string, h wire.Hello) (net.Conn, wire.Hello, error) {
	n := d.node
	dctx, cancel := context.WithTimeout(ctx, n.cfg.DialTimeout)
	conn, err := n.cfg.Network.Dial(dctx, addr)
	cancel()
	if err != nil {
		return nil, wire.Hello{}, err
	}
	// The handshake reads and writes with deadlines; ctx ending closes
	// the connection under it (the raw one: conn is reassigned below, and
	// the AfterFunc runs on its own goroutine).
	raw := conn
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	srv, conn, err := d.handshake(raw, h)
	if !stop() && err == nil {
		err = fmt.Errorf("%w: %w", ErrHandshake, ctx.Err())
	}
	if err != nil {
		n.stats.handshakeFailures.Add(1)
		conn.Close()
		n.onRefused(err)
		return nil, wire.Hello{}, err
	}
	return conn, srv, nil
}

// handshake runs TLS (when configured) and the client handshake on
// conn under one deadline. It returns the connection to use (TLS-wrapped).
func (d *dialer) handshake(conn net.Conn, h wire.Hello) (wire.Hello, net.Conn, error) {
	n := d.node
	deadline := time.Now().Add(n.cfg.HandshakeTimeout)
	_ = conn.SetDeadline(deadline)
	var state *tls.ConnectionState
	if n.cfg.TLSClient != nil {
		tc := tls.Client(conn, d.tlsConfig(h.WantNode))
		if err := tc.Handshake(); err != nil {
			return wire.Hello{}, conn, fmt.Errorf("%w: tls: %w", ErrHandshake, err)
		}
		st := tc.ConnectionState()
		state = &st
		conn = tc
	}
	verify := func(srv *wire.Hello) *wire.Refusal { return verifyIdentity(n.cfg.VerifyPeer, srv.Node, state) }
	srv, err := wire.ClientHandshake(conn, n.cookie, h, deadline, verify)
	return srv, conn, err
}

// tlsConfig is the TLS configuration for dialing node: with no
// ServerName configured, the server's certificate is verified for the
// node name itself.
func (d *dialer) tlsConfig(node string) *tls.Config {
	n := d.node
	c := n.cfg.TLSClient
	if c.ServerName != "" || node == "" {
		return c
	}
	c = c.Clone()
	c.ServerName = node
	return c
}

// live is the live native outbound link to node, if there is one.
func (d *dialer) live(node string) (*peer, *link) {
	n := d.node
	n.mu.Lock()
	s := n.slots[node]
	if s == nil || s.cur == nil || n.closing {
		n.mu.Unlock()
		return nil, nil
	}
	p := s.cur
	n.mu.Unlock()
	if l := p.outLink(); l != nil {
		return p, l
	}
	return nil, nil
}

// connectBounded is connect for the operations that take no ctx (Send,
// Cast, Watch): a wait for the link to come up lasts at most DialTimeout
// plus HandshakeTimeout.
func (d *dialer) connectBounded(node string) (*peer, *link, error) {
	n := d.node
	if p, l := d.live(node); l != nil {
		return p, l, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.DialTimeout+n.cfg.HandshakeTimeout)
	defer cancel()
	return d.connect(ctx, node)
}

// connect returns the live native outbound link to node, dialing it when
// there is none. ctx bounds the wait.
func (d *dialer) connect(ctx context.Context, node string) (*peer, *link, error) {
	n := d.node
	if p, l := d.live(node); l != nil {
		return p, l, nil
	}
	for {
		n.mu.Lock()
		if n.closing {
			n.mu.Unlock()
			return nil, nil, actor.ErrStopped
		}
		s := n.slots[node]
		if s == nil || (s.addr == "" && s.cur == nil) {
			n.mu.Unlock()
			return nil, nil, fmt.Errorf("%w: no address known for node %q (not in discovery)", actor.ErrUnreachable, node)
		}
		if p := s.cur; p != nil {
			if l := p.outLink(); l != nil {
				n.mu.Unlock()
				return p, l, nil
			}
		}
		if s.addr == "" {
			// The incarnation we knew went and took its address with
			// it (discovery's down), or the node never gave one:
			// nothing to dial until discovery or a hello brings one.
			n.mu.Unlock()
			return nil, nil, fmt.Errorf("%w: no address known for node %q (its last incarnation is gone, or it gave none)", actor.ErrUnreachable, node)
		}
		a := s.dialing
		if a == nil {
			a = s.beginDial(s.addr)
			addr, fallbacks := s.addr, s.fallbacks()
			n.mu.Unlock()
			err := d.native(ctx, node, addr)
			if err != nil {
				err = fmt.Errorf("%w: dial %s at %s: %w", actor.ErrUnreachable, node, addr, err)
				// The address failed: the others the node is known at,
				// in turn, within this attempt.
				for _, fb := range fallbacks {
					if ctx.Err() != nil || errors.Is(err, actor.ErrStopped) {
						break
					}
					fbErr := d.native(ctx, node, fb.addr)
					if fbErr == nil {
						err = nil
						break
					}
					err = fmt.Errorf("%w; then at %s, %s: %w", err, fb.addr, fb.why, fbErr)
				}
			}
			n.mu.Lock()
			s.endDial()
			if ctx.Err() == nil {
				a.err = err // the peer's failure, not our ctx's: shared
			}
			close(a.done)
			n.mu.Unlock()
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		n.mu.Unlock()
		select {
		case <-a.done:
			// A dial to an address the node has since replaced (Connect
			// with a new one, a restarted peer's new address) says
			// nothing about the new one: dial that.
			n.mu.Lock()
			moved := s.addr != a.addr
			n.mu.Unlock()
			if a.err != nil && !moved {
				return nil, nil, a.err
			}
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%w: waiting for a link to %s: %v", actor.ErrUnreachable, node, ctx.Err())
		}
	}
}

// fallback is an address to dial when the slot's own failed, and why it
// may reach the node.
type fallback struct{ addr, why string }

// fallbacks are the addresses connect dials, in turn, after s.addr
// failed. For a configured address (a seed, Connect), the one the node's
// hello announced when it dialled us (alt). For one discovery listed,
// the other incarnations it lists, the latest first: it may list a
// crashed incarnation beside its successor until the crashed one's TTL
// runs out, and a node that took the crashed one's address last would
// otherwise stay unreachable until its Down. Under n.mu.
func (s *slot) fallbacks() []fallback {
	if s.addrInc == 0 {
		if s.alt != "" && s.alt != s.addr {
			return []fallback{{s.alt, "the address its hello gave"}}
		}
		return nil
	}
	var out []fallback
	for i := len(s.ups) - 1; i >= 0; i-- {
		u := s.ups[i]
		if u.Addr != s.addr && !slices.ContainsFunc(out, func(f fallback) bool { return f.addr == u.Addr }) {
			out = append(out, fallback{u.Addr, "listed for incarnation " + actor.FormatIncarnation(u.Incarnation)})
		}
	}
	return out
}

func (d *dialer) native(ctx context.Context, node, addr string) error {
	n := d.node
	h := d.hello(wire.RoleNative, 0, node, 0)
	conn, srv, err := d.to(ctx, addr, h)
	if err != nil {
		d.log.failed(node, addr, err)
		return err
	}
	l, err := n.attach(conn, srv, true, h.LinkID)
	if err != nil {
		conn.Close()
		d.log.failed(node, addr, err)
		return err
	}
	n.mu.Lock()
	if s := n.slots[node]; s != nil {
		s.via, s.viaInc = addr, l.peer.inc
	}
	n.mu.Unlock()
	return nil
}

// pool connects to worker of node's incarnation inc. It fails if inc
// is not node's current incarnation or the peer refuses (pool disabled,
// worker out of range, incarnation changed).
func (d *dialer) pool(ctx context.Context, node string, inc uint64, worker int) (*poolLink, error) {
	n := d.node
	n.mu.Lock()
	s := n.slots[node]
	var addr string
	if s != nil {
		addr = s.addr
		if s.viaInc == inc && s.via != "" {
			addr = s.via // where the native link to inc was dialled: an alternate, for a seed that moved
		}
	}
	closing := n.closing
	n.mu.Unlock()
	switch {
	case closing:
		return nil, actor.ErrStopped
	case addr == "":
		return nil, fmt.Errorf("%w: no address for %s", actor.ErrUnreachable, node)
	}
	h := d.hello(wire.RolePool, uint32(worker), node, inc)
	conn, srv, err := d.to(ctx, addr, h)
	if err != nil {
		return nil, fmt.Errorf("%w: pool link %d to %s: %w", actor.ErrUnreachable, worker, node, err)
	}
	l, err := n.attach(&roleConn{Conn: conn, role: wire.RolePool, worker: uint32(worker)}, srv, true, h.LinkID)
	if err != nil {
		conn.Close()
		return nil, err
	}
	pl := &poolLink{n: n, l: l, stats: (*host)(n).poolStatsFor(node)}
	pl.q.opts.maxBody = n.cfg.Limits.MaxFrameSize - 1 - binary.MaxVarintLen64
	pl.q.wake = func() {}
	return pl, nil
}
