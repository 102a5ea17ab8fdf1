package remote

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/internal/wire"
)

// Until a peer has proved the cookie it costs this node a goroutine, a
// socket and a few KiB, and anyone who can reach the listener can make
// it pay. So the accept loop bounds that cost: handshakes in progress are
// capped node-wide and per remote IP (a connection over a cap is closed
// at once, without a word, and counted), each handshake has one deadline
// for all of it (TLS included), and accept errors (running out of file
// descriptors) back off instead of spinning, with rate-limited logs.

// Accept errors back off from acceptBackoffMin, doubling up to
// acceptBackoffMax; an accepted connection resets it.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// backoff is a doubling delay between a floor and a ceiling.
type backoff struct {
	min, max, cur time.Duration
}

// next is the delay before the next attempt after a failure.
func (b *backoff) next() time.Duration {
	switch {
	case b.cur == 0:
		b.cur = b.min
	case b.cur < b.max:
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur
}

// reset starts over from the floor after a success.
func (b *backoff) reset() { b.cur = 0 }

// logLimiter lets through at most burst lines per interval and counts
// the rest, so a peer (or a broken listener) cannot fill the disk: the
// next line let through reports how many were suppressed.
type logLimiter struct {
	every time.Duration
	burst int

	mu         sync.Mutex // protects following
	start      time.Time  // of the current interval
	n          int        // lines let through in it
	suppressed int        // since the last line let through
}

// allow reports whether a line may be logged now, and how many were
// suppressed before it.
func (r *logLimiter) allow(now time.Time) (ok bool, suppressed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.start) >= r.every {
		r.start, r.n = now, 0
	}
	if r.n >= r.burst {
		r.suppressed++
		return false, 0
	}
	r.n++
	suppressed, r.suppressed = r.suppressed, 0
	return true, suppressed
}

// acceptor is this node's listener and what the accept loop keeps to
// bound what strangers cost: the handshakes in progress (gate) and the
// rate limits of the lines they can make it log.
type acceptor struct {
	node       *Node
	ln         net.Listener
	gate       *handshakeGate // handshakes in progress
	acceptLog  logLimiter     // accept errors
	shedLog    logLimiter     // connections over a handshake cap
	refusedLog logLimiter     // failed inbound handshakes
}

func (a *acceptor) loop() {
	n := a.node
	defer n.wg.Done()
	bo := backoff{min: acceptBackoffMin, max: acceptBackoffMax}
	for {
		conn, err := a.ln.Accept()
		if err != nil {
			select {
			case <-n.stop:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			n.stats.acceptErrors.Add(1)
			wait := bo.next()
			if ok, suppressed := a.acceptLog.allow(time.Now()); ok {
				n.log.Warn("accept failed; backing off", "err", err, "retry_in", wait, "suppressed", suppressed)
			}
			t := time.NewTimer(wait)
			select {
			case <-n.stop:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		bo.reset()
		slot, shed := a.gate.enter(sourceOf(conn), conn)
		if shed != nil {
			_ = shed.Close() // its handshake's goroutine gives up and leaves
		}
		if slot == nil || shed != nil {
			n.stats.handshakesShed.Add(1)
			if ok, suppressed := a.shedLog.allow(time.Now()); ok {
				what, remote := "connection closed: too many handshakes in progress", conn.RemoteAddr().String()
				if shed != nil {
					what, remote = "oldest handshake shed for a newcomer: too many in progress", shed.RemoteAddr().String()
				}
				n.log.Warn(what, "remote", remote, "in_progress", a.gate.inProgress(), "max", n.cfg.Limits.MaxHandshakes, "max_per_ip", n.cfg.Limits.MaxHandshakesPerIP, "suppressed", suppressed)
			}
		}
		if slot == nil {
			_ = conn.Close()
			continue
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			a.accept(conn, slot)
		}()
	}
}

// accept authenticates an inbound connection and attaches it. One
// deadline bounds all of it: TLS, the hello exchange and admission; the
// first byte has a deadline of its own, much shorter (handshakegate.go).
// slot is its place in the gate, given back when the handshake ends.
func (a *acceptor) accept(raw net.Conn, slot *handshakeSlot) {
	n := a.node
	now := time.Now()
	deadline := now.Add(n.cfg.HandshakeTimeout)
	fb := newHandshakeConn(raw, slot, now.Add(n.cfg.firstByteTimeout()), n.cfg.TLSServer == nil)
	_ = fb.SetDeadline(deadline)
	remote := raw.RemoteAddr().String()
	// failed ends a handshake that brought no link up: counted as shed
	// when the gate shed it or it never sent a byte, as a failure
	// otherwise.
	failed := func(peer string, err error) {
		switch {
		case a.gate.leave(slot): // counted when it was shed
		case !fb.heard:
			n.stats.handshakesShed.Add(1)
			if ok, suppressed := a.shedLog.allow(time.Now()); ok {
				n.log.Warn("connection closed: nothing received within the first-byte deadline", "remote", remote, "deadline", n.cfg.firstByteTimeout(), "suppressed", suppressed)
			}
		default:
			n.stats.handshakeFailures.Add(1)
			a.logRefused(remote, peer, err)
		}
		raw.Close()
	}
	// The handshake reads through fb; the link keeps raw (TLS wraps fb
	// for good: it has heard by then, and only passes reads on).
	var hs, conn net.Conn = fb, raw
	var state *tls.ConnectionState
	if n.cfg.TLSServer != nil {
		tc := tls.Server(fb, n.cfg.TLSServer)
		if err := tc.Handshake(); err != nil {
			failed("", err)
			return
		}
		slot.stage.Store(stageHello) // with a certificate this node verified
		st := tc.ConnectionState()
		state = &st
		hs, conn = tc, tc
	}
	self := n.dial.hello(wire.RoleNative, 0, "", 0)
	var l *link
	var old *peer
	// Admission runs once the client has proved the cookie. The link is
	// registered before the welcome is sent: a node that has begun
	// closing refuses, so a client never sends on a link this node will
	// not read.
	admit := func(cli *wire.Hello) *wire.Refusal {
		if !a.gate.prove(slot) {
			return wire.Refuse(wire.CodeRefused, "handshake shed: too many in progress")
		}
		if r := a.checkClient(cli); r != nil {
			return r
		}
		if r := verifyIdentity(n.cfg.VerifyPeer, cli.Node, state); r != nil {
			return r
		}
		var err error
		if l, old, err = n.register(conn, *cli, false, 0); err != nil {
			var r *wire.Refusal
			if errors.As(err, &r) {
				return r
			}
			return wire.Refuse(wire.CodeRefused, "%v", err)
		}
		return nil
	}
	cli, err := wire.ServerHandshake(hs, n.cookie, self, deadline, admit)
	if err != nil {
		failed(cli.Node, err)
		if l != nil {
			l.close(err) // registered, but the welcome could not be sent
			l.peer.forgetDialed(l)
		}
		if old != nil {
			// (fix) register replaced old with the client's incarnation
			// (buried): it is gone whatever became of the welcome.
			n.incarnationGone(old, fmt.Errorf("restarted as incarnation %016x", l.peer.inc))
		}
		return
	}
	a.gate.leave(slot)
	n.activate(l, old)
}

// logRefused logs a failed inbound handshake, rate-limited: anyone can
// make a node refuse them.
func (a *acceptor) logRefused(remote, peer string, err error) {
	n := a.node
	if ok, suppressed := a.refusedLog.allow(time.Now()); ok {
		n.log.Warn("link refused", "remote", remote, "peer", logName(peer), "reason", err, "suppressed", suppressed)
	}
}

// checkClient refuses a client hello that proved the cookie, or returns
// nil. (register refuses what needs the node lock.)
func (a *acceptor) checkClient(h *wire.Hello) *wire.Refusal {
	n := a.node
	me, inc := n.sys.Name(), n.sys.Incarnation()
	n.mu.Lock()
	closing := n.closing
	n.mu.Unlock()
	switch {
	case closing:
		return wire.Refuse(wire.CodeStopping, "node %s is shutting down", me)
	case h.Node == me:
		return wire.Refuse(wire.CodeNameClash, "name clash: this node is already %q", me)
	case h.WantNode != "" && h.WantNode != me:
		return wire.Refuse(wire.CodeWrongNode, "wrong node: this is %q, not %q", me, h.WantNode)
	case h.WantInc != 0 && h.WantInc != inc:
		return wire.Refuse(wire.CodeStale, "stale incarnation: %s is now %016x, not %016x", me, inc, h.WantInc)
	case h.Role == wire.RolePool && n.cfg.PoolSize == PoolDisabled:
		return wire.Refuse(wire.CodeNoPool, "receiver pool disabled on %s", me)
	case h.Role == wire.RolePool && int(h.Worker) >= n.cfg.poolWorkers():
		return wire.Refuse(wire.CodeNoPool, "worker %d out of range: pool size is %d", h.Worker, n.cfg.poolWorkers())
	case h.Role != wire.RoleNative && h.Role != wire.RolePool:
		return wire.Refuse(wire.CodeBadRole, "unknown link role %d", h.Role)
	}
	return nil
}
