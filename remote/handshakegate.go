package remote

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Handshake slots. Whoever can reach the listener can open connections
// and say nothing, from as many addresses as it has, so a cap alone
// (shedding whoever arrives at it) lets an attacker hold every slot and
// lock new peers out. Three rules keep room for a newcomer:
//
//   - a connection that has sent no byte within the first-byte deadline
//     (a fifth of HandshakeTimeout, at most a second) gives its slot
//     back: a real dialer speaks at once;
//   - at a cap the newcomer is admitted and the slowest handshake not yet
//     proved is shed in its place: at the per-address cap, that
//     address's; at the node-wide cap, the slowest of the addresses
//     holding at least half as many slots as the one holding the most,
//     so that every address gets a share of the cap and an address with
//     few handshakes is never the one to lose them (while many addresses
//     holding about as many compete as one). The slowest is the one that
//     got least far (nothing received, counting what the kernel holds
//     unread for a handshake whose goroutine is late, then its hello not
//     yet whole, then the rest), the oldest of those;
//   - a handshake whose client has proved the cookie is never shed.
//
// A legitimate dialer sends its hello at once, so to push it out an
// attacker must open connections from its address faster than it
// completes a handshake, and get as far as it did. IPv6 addresses are
// counted by /64, the block one host is usually given.

// handshakeSlot is one handshake in progress.
type handshakeSlot struct {
	src   string
	conn  net.Conn // closed to shed it
	seq   uint64   // arrival order
	stage atomic.Int32
	// Under the gate's mu:
	proved bool // the client proved the cookie: never shed
	shed   bool // shed to make room for a newcomer
}

// handshakeGate counts the handshakes in progress, node-wide and per
// source address, and makes room at either cap.
type handshakeGate struct {
	max, perSrc int

	mu    sync.Mutex // protects following
	total int
	seq   uint64
	bySrc map[string][]*handshakeSlot // in arrival order
}

func newHandshakeGate(max, perSrc int) *handshakeGate {
	return &handshakeGate{max: max, perSrc: perSrc, bySrc: make(map[string][]*handshakeSlot)}
}

// enter admits a handshake of conn from src. At a cap it sheds the
// oldest handshake not yet proved (see above) and returns its connection
// for the caller to close; s is nil when nothing can be shed (every
// handshake at the cap has proved the cookie): the newcomer is refused.
func (g *handshakeGate) enter(src string, conn net.Conn) (s *handshakeSlot, shed net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var victim *handshakeSlot
	for range maxRecheck {
		switch {
		case len(g.bySrc[src]) >= g.perSrc:
			victim = slowest(g.bySrc[src])
		case g.total >= g.max:
			victim = g.victimLocked()
		}
		// Its goroutine may not have read what it received yet (a loaded
		// node): what the kernel holds counts as heard.
		if victim == nil || victim.stage.Load() != stageSilent || unread(victim.conn) == 0 {
			break
		}
		victim.stage.Store(stageHeard)
	}
	if victim == nil && (len(g.bySrc[src]) >= g.perSrc || g.total >= g.max) {
		return nil, nil
	}
	if victim != nil {
		victim.shed = true
		g.removeLocked(victim)
		shed = victim.conn
	}
	g.seq++
	s = &handshakeSlot{src: src, conn: conn, seq: g.seq}
	g.bySrc[src] = append(g.bySrc[src], s)
	g.total++
	return s, shed
}

// maxRecheck bounds how many candidates enter looks at, in turn, when
// those it picks turn out to have received bytes.
const maxRecheck = 8

// victimLocked is the handshake to shed at the node-wide cap: the
// slowest not yet proved of the sources holding at least half as many
// slots as the one holding the most, or of any source if theirs have all
// proved. Under mu.
func (g *handshakeGate) victimLocked() *handshakeSlot {
	most := 0
	for _, ss := range g.bySrc {
		most = max(most, len(ss))
	}
	var best, any *handshakeSlot
	for _, ss := range g.bySrc {
		c := slowest(ss)
		switch {
		case c == nil:
		case 2*len(ss) >= most && (best == nil || c.before(best)):
			best = c
		case any == nil || c.before(any):
			any = c
		}
	}
	if best == nil {
		return any
	}
	return best
}

// Handshake stages, the order in which slots are shed.
const (
	stageSilent int32 = iota // nothing received
	stageHeard               // a byte, not yet the whole hello
	stageHello               // the hello whole (TLS: done), not yet proved
)

// slowest is the handshake of ss not yet proved that got least far, the
// oldest of those; nil if every one has proved.
func slowest(ss []*handshakeSlot) *handshakeSlot {
	var best *handshakeSlot
	for _, s := range ss { // in arrival order
		if !s.proved && (best == nil || s.stage.Load() < best.stage.Load()) {
			best = s
		}
	}
	return best
}

// before reports whether s is to be shed before o: it got less far, or
// as far and arrived earlier.
func (s *handshakeSlot) before(o *handshakeSlot) bool {
	a, b := s.stage.Load(), o.stage.Load()
	return a < b || (a == b && s.seq < o.seq)
}

// removeLocked takes s out of the counts. Under mu.
func (g *handshakeGate) removeLocked(s *handshakeSlot) {
	ss := g.bySrc[s.src]
	for i, o := range ss {
		if o == s {
			ss = append(ss[:i], ss[i+1:]...)
			break
		}
	}
	if len(ss) == 0 {
		delete(g.bySrc, s.src)
	} else {
		g.bySrc[s.src] = ss
	}
	g.total--
}

// leave ends a handshake admitted by enter; it reports whether it had
// been shed meanwhile (its slot already went to a newcomer).
func (g *handshakeGate) leave(s *handshakeSlot) (wasShed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.shed {
		return true
	}
	g.removeLocked(s)
	return false
}

// prove marks s's client as having proved the cookie: it is never shed
// from now on. False when it was shed before.
func (g *handshakeGate) prove(s *handshakeSlot) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	s.proved = true
	return !s.shed
}

func (g *handshakeGate) inProgress() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total
}

// sourceOf is the source a handshake is counted under: the remote IP
// (IPv6 by /64), or the whole address when it has no port, as on an
// in-memory network.
func sourceOf(conn net.Conn) string {
	a := conn.RemoteAddr()
	if a == nil {
		return ""
	}
	if ta, ok := a.(*net.TCPAddr); ok {
		if ta.IP.To4() == nil && len(ta.IP) == net.IPv6len {
			return ta.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
		}
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// firstByteTimeout is how long a new connection may stay silent before
// it gives its handshake slot back.
func (c Config) firstByteTimeout() time.Duration {
	return min(c.HandshakeTimeout/5, time.Second)
}

// handshakeConn is a connection being handshaken: its reads time out at
// the first-byte deadline until a byte has arrived, then at whatever
// deadline the handshake set, and it marks its slot's stage as bytes
// arrive. Used by the handshake's goroutine alone.
type handshakeConn struct {
	net.Conn
	slot  *handshakeSlot
	first time.Time // the first-byte deadline
	full  time.Time // the read deadline the handshake set
	heard bool      // a byte has arrived
	// plain: the hello is read from this connection (no TLS above it);
	// got counts the bytes read of it, want is its size once known.
	plain     bool
	got, want int
}

func newHandshakeConn(conn net.Conn, slot *handshakeSlot, first time.Time, plain bool) *handshakeConn {
	c := &handshakeConn{Conn: conn, slot: slot, first: first, plain: plain}
	_ = conn.SetReadDeadline(first)
	return c
}

func (c *handshakeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.heard {
		c.heard = true
		c.slot.stage.Store(stageHeard)
		_ = c.Conn.SetReadDeadline(c.full)
	}
	if n > 0 && c.plain && c.want >= 0 {
		// A handshake message is u16be length ‖ body (SPEC.md).
		b := p[:n]
		for ; c.got < 2 && len(b) > 0; c.got++ {
			c.want = c.want<<8 | int(b[0])
			b = b[1:]
		}
		if c.got += len(b); c.got >= 2 && c.got >= 2+c.want {
			c.slot.stage.Store(stageHello)
			c.want = -1 // done
		}
	}
	return n, err
}

func (c *handshakeConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

func (c *handshakeConn) SetReadDeadline(t time.Time) error {
	c.full = t
	if !c.heard && (t.IsZero() || t.After(c.first)) {
		t = c.first
	}
	return c.Conn.SetReadDeadline(t)
}
