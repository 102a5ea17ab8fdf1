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
	ProtocolVersion uint16 = 3
	maxHandshakeMsg        = 4096
	nonceSize              = 32
	macSize                = sha256.Size
)

// The two proofs are HMACs under distinct labels, so that neither can
// stand for the other (a proof reflected back to the node that made it
// proves nothing).
const (
	labelClientProof   = "mailroom/v3 client proof\x00"
	labelServerVerdict = "mailroom/v3 server verdict\x00"
)

// Link roles.
const (
	roleNative uint8 = 0 // a node's own outbound link (requests out, replies back)
	rolePool   uint8 = 1 // a proxy's link, paired with one receiver pool worker
)

// ErrHandshake wraps every handshake failure: a refusal by either side
// (with its reason), a failed proof, a TLS failure, a malformed or
// missing message, or the handshake deadline.
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

// Handshake status bytes (SPEC.md).
const (
	hsOK          uint8 = 0 // go on / welcome
	hsRefused     uint8 = 1 // refused: code and reason, not authenticated
	hsRefusedAuth uint8 = 2 // refused by a server whose MAC covers the refusal
)

// transcript is every handshake message so far as it crossed the wire
// (u16be length ‖ body). Each proof is an HMAC over it, so a proof covers
// the magic, the version, both nonces and every field of both hellos.
type transcript []byte

func (t *transcript) add(msg []byte) {
	*t = append(binary.BigEndian.AppendUint16(*t, uint16(len(msg))), msg...)
}

// mac is HMAC-SHA256(cookie, label ‖ transcript ‖ tail). The transcript
// is self-delimiting, so tail (a verdict) cannot be confused with it.
func (t transcript) mac(cookie []byte, label string, tail []byte) []byte {
	m := hmac.New(sha256.New, cookie)
	m.Write([]byte(label))
	m.Write(t)
	m.Write(tail)
	return m.Sum(nil)
}

// writeMsg writes one handshake message and adds it to t (when not nil).
func writeMsg(w io.Writer, t *transcript, body []byte) error {
	if len(body) > maxHandshakeMsg {
		return fmt.Errorf("handshake message of %d bytes", len(body))
	}
	buf := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(body)), uint16(len(body)))
	if _, err := w.Write(append(buf, body...)); err != nil {
		return err
	}
	if t != nil {
		t.add(body)
	}
	return nil
}

// readMsg reads one handshake message and adds it to t (when not nil).
func readMsg(r io.Reader, t *transcript) ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint16(n[:])
	if size > maxHandshakeMsg {
		return nil, fmt.Errorf("%w: claims %d bytes (max %d)", errOversized, size, maxHandshakeMsg)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	if t != nil {
		t.add(b)
	}
	return b, nil
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

// readHello decodes a hello that must end the message.
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
	if d.err == nil && len(d.b) != 0 {
		d.malformed("%d trailing bytes", len(d.b))
	}
	return h
}

// clientHello is the dialer's first message: magic, version, hello.
func clientHello(h *hello) []byte {
	b := binary.BigEndian.AppendUint16(append([]byte(nil), protoMagic[:]...), ProtocolVersion)
	return appendHello(b, h)
}

// refusalMsg is status ‖ u8 code ‖ string reason.
func refusalMsg(status uint8, r *refusal) []byte {
	return appendString([]byte{status, byte(r.code)}, r.reason)
}

// readRefusal decodes the code and reason that follow a refusal status.
// A refusal in the format of versions 1 and 2 (a reason alone: an older
// node refusing this version) is read as such, with codeRefused.
func readRefusal(d *dec) *refusal {
	orig := d.b
	code := refusalCode(d.u8("refusal code"))
	reason := d.str("refusal reason")
	if d.err == nil {
		return &refusal{byPeer: true, code: code, reason: reason}
	}
	old := dec{b: orig}
	if reason := old.str("reason"); old.err == nil && len(old.b) == 0 {
		d.b, d.err = nil, nil
		return &refusal{byPeer: true, code: codeRefused, reason: reason}
	}
	return &refusal{byPeer: true, code: codeMalformed, reason: fmt.Sprintf("a refusal that did not decode (%v)", d.err)}
}

func newNonce() (n [nonceSize]byte) {
	if _, err := rand.Read(n[:]); err != nil {
		panic(fmt.Sprintf("remote: no randomness for a nonce: %v", err))
	}
	return n
}

// hsErr wraps a failure of the handshake's own I/O.
func hsErr(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrHandshake, what, err)
}

// refused wraps a refusal (ours or the peer's).
func refused(r *refusal) error { return fmt.Errorf("%w: %w", ErrHandshake, r) }

// clientHandshake runs the dialing side (SPEC.md, Handshake) until
// deadline and returns the server's hello. verify, when not nil, checks
// the server's hello (its TLS identity) before this side proves
// anything. A refusal from the server is returned as a *refusal, marked
// authenticated only when the server's MAC over it verified.
func clientHandshake(conn net.Conn, cookie []byte, self hello, deadline time.Time, verify func(*hello) *refusal) (hello, error) {
	_ = conn.SetDeadline(deadline)
	defer conn.SetDeadline(time.Time{})
	var t transcript
	self.Nonce = newNonce()
	if err := writeMsg(conn, &t, clientHello(&self)); err != nil {
		return hello{}, hsErr("send hello", err)
	}
	msg, err := readMsg(conn, &t)
	if err != nil {
		return hello{}, hsErr("read server hello", err)
	}
	d := dec{b: msg}
	switch st := d.u8("status"); {
	case d.err != nil:
		return hello{}, hsErr("server hello", d.err)
	case st == hsRefused:
		return hello{}, refused(readRefusal(&d))
	case st != hsOK:
		return hello{}, fmt.Errorf("%w: server hello: status %d", ErrHandshake, st)
	}
	srv := readHello(&d)
	// Check what the server claims before proving anything to it.
	var r *refusal
	switch {
	case d.err != nil:
		r = refuse(codeMalformed, "malformed server hello: %v", d.err)
	case srv.Node == "":
		r = refuse(codeMalformed, "empty node name")
	case self.WantNode != "" && srv.Node != self.WantNode:
		r = refuse(codeWrongNode, "wrong node: wanted %q, reached %q", self.WantNode, srv.Node)
	case self.WantInc != 0 && srv.Inc != self.WantInc:
		r = refuse(codeStale, "stale incarnation: wanted %016x of %s, reached %016x", self.WantInc, srv.Node, srv.Inc)
	case verify != nil:
		r = verify(&srv)
	}
	if r != nil {
		_ = writeMsg(conn, nil, refusalMsg(hsRefused, r))
		return srv, refused(r)
	}
	proof := t.mac(cookie, labelClientProof, nil)
	if err := writeMsg(conn, &t, append([]byte{hsOK}, proof...)); err != nil {
		return srv, hsErr("send proof", err)
	}
	msg, err = readMsg(conn, nil)
	if err != nil {
		return srv, hsErr("read verdict", err)
	}
	d = dec{b: msg}
	switch st := d.u8("status"); {
	case d.err != nil:
		return srv, hsErr("verdict", d.err)
	case st == hsOK:
		if len(d.b) != macSize || !hmac.Equal(d.b, t.mac(cookie, labelServerVerdict, msg[:1])) {
			return srv, refused(refuse(codeBadCookie, "bad cookie: the server could not prove it knows the cookie"))
		}
		return srv, nil
	case st == hsRefused:
		return srv, refused(readRefusal(&d))
	case st == hsRefusedAuth && len(msg) > macSize:
		body, mac := msg[:len(msg)-macSize], msg[len(msg)-macSize:]
		d.b = d.b[:len(d.b)-macSize]
		r := readRefusal(&d)
		if d.err == nil && len(d.b) == 0 && hmac.Equal(mac, t.mac(cookie, labelServerVerdict, body)) {
			r.authenticated = true
		} else {
			r.reason += " (its proof did not verify: not acted upon)"
		}
		return srv, refused(r)
	}
	return srv, fmt.Errorf("%w: malformed verdict (status %d, %d bytes)", ErrHandshake, msg[0], len(msg))
}

// serverHandshake runs the accepting side (SPEC.md, Handshake) until
// deadline. It says nothing that depends on the cookie until the client
// has proved it; then admit decides (nil: welcome; a refusal is sent
// with this side's MAC over it). It returns the client's hello as far as
// it was read, with an error when the link is not up.
func serverHandshake(conn net.Conn, cookie []byte, self hello, deadline time.Time, admit func(*hello) *refusal) (hello, error) {
	_ = conn.SetDeadline(deadline)
	defer conn.SetDeadline(time.Time{})
	var t transcript
	msg, err := readMsg(conn, &t)
	if err != nil {
		if errors.Is(err, errOversized) {
			return hello{}, fmt.Errorf("%w: not a mailroom peer (%w)", ErrHandshake, err)
		}
		return hello{}, hsErr("read client hello", err)
	}
	if len(msg) < 6 || [4]byte(msg[:4]) != protoMagic {
		// Not our protocol: say nothing a scanner could use.
		return hello{}, fmt.Errorf("%w: not a mailroom peer (bad magic)", ErrHandshake)
	}
	reject := func(status uint8, cli hello, r *refusal) (hello, error) {
		body := refusalMsg(status, r)
		if status == hsRefusedAuth {
			body = append(body, t.mac(cookie, labelServerVerdict, body)...)
		}
		_ = writeMsg(conn, nil, body)
		return cli, refused(r)
	}
	if v := binary.BigEndian.Uint16(msg[4:6]); v != ProtocolVersion {
		r := refuse(codeVersion, "protocol version %d not supported; this node speaks %d", v, ProtocolVersion)
		if v < 3 {
			// Versions 1 and 2 read a refusal as status ‖ string reason.
			_ = writeMsg(conn, nil, appendString([]byte{hsRefused}, r.reason))
			return hello{}, refused(r)
		}
		return reject(hsRefused, hello{}, r)
	}
	d := dec{b: msg[6:]}
	cli := readHello(&d)
	if d.err != nil {
		return reject(hsRefused, cli, refuse(codeMalformed, "malformed hello: %v", d.err))
	}
	// The server hello proves nothing: it holds no value derived from the
	// cookie, so a client that has not proved the cookie gets nothing to
	// test guesses against.
	self.Nonce = newNonce()
	if err := writeMsg(conn, &t, appendHello([]byte{hsOK}, &self)); err != nil {
		return cli, hsErr("send hello", err)
	}
	want := t.mac(cookie, labelClientProof, nil)
	msg, err = readMsg(conn, &t)
	if err != nil {
		return cli, hsErr("read client proof", err)
	}
	d = dec{b: msg}
	switch st := d.u8("status"); {
	case d.err != nil:
		return reject(hsRefused, cli, refuse(codeMalformed, "empty proof message"))
	case st == hsRefused:
		return cli, refused(readRefusal(&d))
	case st != hsOK:
		return reject(hsRefused, cli, refuse(codeMalformed, "bad proof status %d", st))
	}
	if len(d.b) != macSize || !hmac.Equal(d.b, want) {
		return reject(hsRefused, cli, refuse(codeBadCookie, "bad cookie: the client could not prove it knows the cookie"))
	}
	// The client proved the cookie: its hello may now change this node's
	// state (admit registers the link), and what this side says from here
	// on carries its own MAC.
	if r := admit(&cli); r != nil {
		return reject(hsRefusedAuth, cli, r)
	}
	if err := writeMsg(conn, nil, append([]byte{hsOK}, t.mac(cookie, labelServerVerdict, []byte{hsOK})...)); err != nil {
		return cli, hsErr("send welcome", err)
	}
	return cli, nil
}
