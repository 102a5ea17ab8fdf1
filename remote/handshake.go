package remote

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Protocol identity. A peer with another magic is not a mailroom node; a
// peer with another version is refused with a reason.
var protoMagic = [4]byte{'M', 'R', 'O', 'M'}

const (
	ProtocolVersion uint16 = 2
	maxHandshakeMsg        = 4096
	nonceSize              = 32
	macSize                = sha256.Size
)

// Link roles.
const (
	roleNative uint8 = 0 // a node's own outbound link (requests out, replies back)
	rolePool   uint8 = 1 // a proxy's link, paired with one receiver pool worker
)

// ErrHandshake wraps every handshake failure; the text says why.
var ErrHandshake = errors.New("remote: handshake failed")

var errOversized = errors.New("oversized handshake message")

// hello is what each side says about itself.
type hello struct {
	Role     uint8
	Worker   uint32 // pool links: the worker index wanted
	Node     string
	Inc      uint64
	PoolSize uint32
	WantNode string // client: the node it means to reach ("" = any)
	WantInc  uint64 // client: the incarnation it means to reach (0 = any)
	Addr     string // the address this side can be dialed at
	LinkID   uint64 // the dialer's id for this link (0 from a server; supersede.go)
	Nonce    [nonceSize]byte
}

// handshake status bytes.
const (
	hsContinue uint8 = 0
	hsRefused  uint8 = 1
)

// refusal is a handshake refused by this side or the peer.
type refusal struct {
	byPeer bool
	reason string
}

func (r *refusal) Error() string {
	if r.byPeer {
		return "refused by peer: " + r.reason
	}
	return "refused: " + r.reason
}

func writeMsg(w io.Writer, body []byte) error {
	if len(body) > maxHandshakeMsg {
		return fmt.Errorf("handshake message of %d bytes", len(body))
	}
	buf := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(body)), uint16(len(body)))
	_, err := w.Write(append(buf, body...))
	return err
}

func readMsg(r io.Reader) ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint16(n[:])
	if size > maxHandshakeMsg {
		return nil, fmt.Errorf("%w: claims %d bytes (max %d)", errOversized, size, maxHandshakeMsg)
	}
	b := make([]byte, size)
	_, err := io.ReadFull(r, b)
	return b, err
}

func appendHello(dst []byte, h *hello) []byte {
	dst = append(dst, h.Role)
	dst = appendUvarint(dst, uint64(h.Worker))
	dst = appendString(dst, h.Node)
	dst = appendU64(dst, h.Inc)
	dst = appendUvarint(dst, uint64(h.PoolSize))
	dst = appendString(dst, h.WantNode)
	dst = appendU64(dst, h.WantInc)
	dst = appendString(dst, h.Addr)
	dst = appendUvarint(dst, h.LinkID)
	return append(dst, h.Nonce[:]...)
}

func readHello(d *dec) hello {
	var h hello
	h.Role = d.u8("role")
	w := d.uvarint("worker")
	h.Node = d.str("node")
	h.Inc = d.u64("incarnation")
	p := d.uvarint("pool size")
	h.WantNode = d.str("wanted node")
	h.WantInc = d.u64("wanted incarnation")
	h.Addr = d.str("address")
	h.LinkID = d.uvarint("link id")
	if w > 1<<20 || p > 1<<20 {
		d.malformed("worker %d / pool size %d out of range", w, p)
	}
	h.Worker, h.PoolSize = uint32(w), uint32(p)
	if len(d.b) < nonceSize {
		d.fail("nonce")
	} else {
		copy(h.Nonce[:], d.b)
		d.b = d.b[nonceSize:]
	}
	return h
}

// transcriptMAC binds both nonces and both identities to the cookie.
func transcriptMAC(cookie []byte, label string, first, second [nonceSize]byte, c, s *hello) []byte {
	m := hmac.New(sha256.New, cookie)
	m.Write([]byte(label))
	m.Write(first[:])
	m.Write(second[:])
	var b []byte
	b = appendString(b, c.Node)
	b = appendU64(b, c.Inc)
	b = append(b, c.Role)
	b = appendUvarint(b, uint64(c.Worker))
	b = appendUvarint(b, c.LinkID)
	b = appendString(b, s.Node)
	b = appendU64(b, s.Inc)
	m.Write(b)
	return m.Sum(nil)
}

func newNonce() (n [nonceSize]byte) {
	if _, err := rand.Read(n[:]); err != nil {
		panic(fmt.Sprintf("remote: no randomness for a nonce: %v", err))
	}
	return n
}

// clientHandshake runs the dialing side. It returns the server's hello.
func clientHandshake(conn net.Conn, cookie []byte, self hello, timeout time.Duration) (hello, error) {
	_ = conn.SetDeadline(time.Now().Add(timeout))
	defer conn.SetDeadline(time.Time{})
	self.Nonce = newNonce()
	first := append(append(append([]byte(nil), protoMagic[:]...), byte(ProtocolVersion>>8), byte(ProtocolVersion)), appendHello(nil, &self)...)
	if err := writeMsg(conn, first); err != nil {
		return hello{}, fmt.Errorf("%w: send hello: %v", ErrHandshake, err)
	}
	msg, err := readMsg(conn)
	if err != nil {
		return hello{}, fmt.Errorf("%w: read server hello: %v", ErrHandshake, err)
	}
	d := dec{b: msg}
	if st := d.u8("status"); st == hsRefused {
		return hello{}, fmt.Errorf("%w: %w", ErrHandshake, &refusal{byPeer: true, reason: d.str("reason")})
	} else if st != hsContinue {
		return hello{}, fmt.Errorf("%w: server status %d", ErrHandshake, st)
	}
	srv := readHello(&d)
	var mac []byte
	if len(d.b) == macSize {
		mac = d.b
	} else {
		d.fail("server proof")
	}
	if d.err != nil {
		return hello{}, fmt.Errorf("%w: server hello: %v", ErrHandshake, d.err)
	}
	refuse := func(reason string) (hello, error) {
		_ = writeMsg(conn, appendString([]byte{hsRefused}, reason))
		return hello{}, fmt.Errorf("%w: %w", ErrHandshake, &refusal{reason: reason})
	}
	if !hmac.Equal(mac, transcriptMAC(cookie, "mailroom/v1/server", self.Nonce, srv.Nonce, &self, &srv)) {
		return refuse("bad cookie: the server could not prove it knows the cookie")
	}
	if self.WantNode != "" && srv.Node != self.WantNode {
		return refuse(fmt.Sprintf("wrong node: wanted %q, reached %q", self.WantNode, srv.Node))
	}
	if self.WantInc != 0 && srv.Inc != self.WantInc {
		return refuse(fmt.Sprintf("stale incarnation: wanted %016x of %s, reached %016x", self.WantInc, srv.Node, srv.Inc))
	}
	proof := transcriptMAC(cookie, "mailroom/v1/client", srv.Nonce, self.Nonce, &self, &srv)
	if err := writeMsg(conn, append([]byte{hsContinue}, proof...)); err != nil {
		return hello{}, fmt.Errorf("%w: send proof: %v", ErrHandshake, err)
	}
	msg, err = readMsg(conn)
	if err != nil {
		return hello{}, fmt.Errorf("%w: read welcome: %v", ErrHandshake, err)
	}
	d = dec{b: msg}
	if st := d.u8("status"); st == hsRefused {
		return hello{}, fmt.Errorf("%w: %w", ErrHandshake, &refusal{byPeer: true, reason: d.str("reason")})
	} else if st != hsContinue || d.err != nil {
		return hello{}, fmt.Errorf("%w: bad welcome", ErrHandshake)
	}
	return srv, nil
}

// serverHandshake runs the accepting side. check may refuse the client
// (a reason string) after its hello and before any proof is sent; admit,
// when not nil, may refuse it after its proof and before the welcome.
func serverHandshake(conn net.Conn, cookie []byte, self hello, timeout time.Duration, check func(*hello) string, admit func(*hello) string) (hello, error) {
	_ = conn.SetDeadline(time.Now().Add(timeout))
	defer conn.SetDeadline(time.Time{})
	msg, err := readMsg(conn)
	if err != nil {
		if errors.Is(err, errOversized) {
			return hello{}, fmt.Errorf("%w: not a mailroom peer (%v)", ErrHandshake, err)
		}
		return hello{}, fmt.Errorf("%w: read client hello: %v", ErrHandshake, err)
	}
	refuse := func(reason string) (hello, error) {
		_ = writeMsg(conn, appendString([]byte{hsRefused}, reason))
		return hello{}, fmt.Errorf("%w: %w", ErrHandshake, &refusal{reason: reason})
	}
	if len(msg) < 6 || [4]byte(msg[:4]) != protoMagic {
		// Not our protocol: say nothing a scanner could use.
		return hello{}, fmt.Errorf("%w: not a mailroom peer (bad magic)", ErrHandshake)
	}
	if v := binary.BigEndian.Uint16(msg[4:6]); v != ProtocolVersion {
		return refuse(fmt.Sprintf("protocol version %d not supported; this node speaks %d", v, ProtocolVersion))
	}
	d := dec{b: msg[6:]}
	cli := readHello(&d)
	if d.err == nil && len(d.b) != 0 {
		d.malformed("trailing bytes")
	}
	if d.err != nil {
		return refuse("malformed hello: " + d.err.Error())
	}
	if reason := check(&cli); reason != "" {
		return refuse(reason)
	}
	self.Nonce = newNonce()
	mac := transcriptMAC(cookie, "mailroom/v1/server", cli.Nonce, self.Nonce, &cli, &self)
	if err := writeMsg(conn, append(appendHello([]byte{hsContinue}, &self), mac...)); err != nil {
		return hello{}, fmt.Errorf("%w: send hello: %v", ErrHandshake, err)
	}
	msg, err = readMsg(conn)
	if err != nil {
		return hello{}, fmt.Errorf("%w: read client proof: %v", ErrHandshake, err)
	}
	d = dec{b: msg}
	switch st := d.u8("status"); st {
	case hsRefused:
		return hello{}, fmt.Errorf("%w: %w", ErrHandshake, &refusal{byPeer: true, reason: d.str("reason")})
	case hsContinue:
	default:
		return refuse(fmt.Sprintf("bad proof status %d", st))
	}
	if len(d.b) != macSize || !hmac.Equal(d.b, transcriptMAC(cookie, "mailroom/v1/client", self.Nonce, cli.Nonce, &cli, &self)) {
		return refuse("bad cookie: the client could not prove it knows the cookie")
	}
	if admit != nil {
		if reason := admit(&cli); reason != "" {
			return refuse(reason)
		}
	}
	if err := writeMsg(conn, []byte{hsContinue}); err != nil {
		return hello{}, fmt.Errorf("%w: send welcome: %v", ErrHandshake, err)
	}
	return cli, nil
}
