package wire

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

	"github.com/mailroom-go/mailroom/internal/nodename"
)

// Protocol identity. A peer with another magic is not a mailroom node; a
// peer with another version is refused with a reason.
var ProtoMagic = [4]byte{'M', 'R', 'O', 'M'}

const (
	ProtocolVersion uint16 = 5
	maxHandshakeMsg        = 4096
	nonceSize              = 32
	MacSize                = sha256.Size
)

// The two proofs are HMACs under distinct labels, so that neither can
// stand for the other (a proof reflected back to the node that made it
// proves nothing).
const (
	LabelClientProof   = "mailroom/v3 client proof\x00"
	LabelServerVerdict = "mailroom/v3 server verdict\x00"
)

// Link roles.
const (
	RoleNative uint8 = 0 // a node's own outbound link (requests out, replies back)
	RolePool   uint8 = 1 // a proxy's link, paired with one receiver pool worker
)

// ErrHandshake wraps every handshake failure: a refusal by either side
// (with its reason), a failed proof, a TLS failure, a malformed or
// missing message, or the handshake deadline.
var ErrHandshake = errors.New("remote: handshake failed")

var errOversized = errors.New("oversized handshake message")

// Hello is what each side says about itself.
type Hello struct {
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
	HsOK          uint8 = 0 // go on / welcome
	HsRefused     uint8 = 1 // refused: code and reason, not authenticated
	HsRefusedAuth uint8 = 2 // refused by a server whose MAC covers the refusal
)

// Transcript is every handshake message so far as it crossed the wire
// (u16be length ‖ body). Each proof is an HMAC over it, so a proof covers
// the magic, the version, both nonces and every field of both hellos.
type Transcript []byte

func (t *Transcript) Add(msg []byte) {
	*t = append(binary.BigEndian.AppendUint16(*t, uint16(len(msg))), msg...)
}

// Mac is HMAC-SHA256(cookie, label ‖ transcript ‖ tail). The transcript
// is self-delimiting, so tail (a verdict) cannot be confused with it.
func (t Transcript) Mac(cookie []byte, label string, tail []byte) []byte {
	m := hmac.New(sha256.New, cookie)
	m.Write([]byte(label))
	m.Write(t)
	m.Write(tail)
	return m.Sum(nil)
}

// WriteMsg writes one handshake message and adds it to t (when not nil).
func WriteMsg(w io.Writer, t *Transcript, body []byte) error {
	if len(body) > maxHandshakeMsg {
		return fmt.Errorf("handshake message of %d bytes", len(body))
	}
	buf := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(body)), uint16(len(body)))
	if _, err := w.Write(append(buf, body...)); err != nil {
		return err
	}
	if t != nil {
		t.Add(body)
	}
	return nil
}

// ReadMsg reads one handshake message and adds it to t (when not nil).
func ReadMsg(r io.Reader, t *Transcript) ([]byte, error) {
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
		t.Add(b)
	}
	return b, nil
}

func AppendHello(dst []byte, h *Hello) []byte {
	dst = append(dst, h.Role)
	dst = AppendUvarint(dst, uint64(h.Worker))
	dst = AppendString(dst, h.Node)
	dst = appendU64(dst, h.Inc)
	dst = AppendUvarint(dst, uint64(h.PoolSize))
	dst = AppendString(dst, h.WantNode)
	dst = appendU64(dst, h.WantInc)
	dst = AppendString(dst, h.Addr)
	dst = AppendUvarint(dst, h.LinkID)
	return append(dst, h.Nonce[:]...)
}

// ReadHello decodes a hello that must end the message.
func ReadHello(d *Dec) Hello {
	var h Hello
	h.Role = d.U8("role")
	w := d.uvarint("worker")
	h.Node = d.Str("node")
	h.Inc = d.u64("incarnation")
	p := d.uvarint("pool size")
	h.WantNode = d.Str("wanted node")
	h.WantInc = d.u64("wanted incarnation")
	h.Addr = d.Str("address")
	h.LinkID = d.uvarint("link id")
	if w > 1<<20 || p > 1<<20 {
		d.malformed("worker %d / pool size %d out of range", w, p)
	}
	h.Worker, h.PoolSize = uint32(w), uint32(p)
	if len(d.B) < nonceSize {
		d.fail("nonce")
	} else {
		copy(h.Nonce[:], d.B)
		d.B = d.B[nonceSize:]
	}
	if d.Err == nil && len(d.B) != 0 {
		d.malformed("%d trailing bytes", len(d.B))
	}
	return h
}

// ClientHello is the dialer's first message: magic, version, hello.
func ClientHello(h *Hello) []byte {
	b := binary.BigEndian.AppendUint16(append([]byte(nil), ProtoMagic[:]...), ProtocolVersion)
	return AppendHello(b, h)
}

// RefusalMsg is status ‖ u8 code ‖ string reason.
func RefusalMsg(status uint8, r *Refusal) []byte {
	return AppendString([]byte{status, byte(r.Code)}, r.Reason)
}

// ReadRefusal decodes the code and reason that follow a refusal status.
// A refusal in the format of versions 1 and 2 (a reason alone: an older
// node refusing this version) is read as such, with codeRefused.
func ReadRefusal(d *Dec) *Refusal {
	orig := d.B
	code := refusalCode(d.U8("refusal code"))
	reason := d.Str("refusal reason")
	if d.Err == nil {
		return &Refusal{ByPeer: true, Code: code, Reason: reason}
	}
	old := Dec{B: orig}
	if reason := old.Str("reason"); old.Err == nil && len(old.B) == 0 {
		d.B, d.Err = nil, nil
		return &Refusal{ByPeer: true, Code: CodeRefused, Reason: reason}
	}
	return &Refusal{ByPeer: true, Code: CodeMalformed, Reason: fmt.Sprintf("a refusal that did not decode (%v)", d.Err)}
}

func NewNonce() (n [nonceSize]byte) {
	if _, err := rand.Read(n[:]); err != nil {
		panic(fmt.Sprintf("remote: no randomness for a nonce: %v", err))
	}
	return n
}

// badName refuses a hello whose node name is off the rule.
func badName(name string) *Refusal {
	return Refuse(CodeBadName, "node name %s: want %s", nodename.Quote(name), nodename.Rule)
}

// hsErr wraps a failure of the handshake's own I/O.
func hsErr(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrHandshake, what, err)
}

// refused wraps a refusal (ours or the peer's).
func refused(r *Refusal) error { return fmt.Errorf("%w: %w", ErrHandshake, r) }

// ClientHandshake runs the dialing side (SPEC.md, Handshake) until
// deadline and returns the server's hello. verify, when not nil, checks
// the server's hello (its TLS identity) before this side proves
// anything. A refusal from the server is returned as a *refusal, marked
// authenticated only when the server's MAC over it verified.
func ClientHandshake(conn net.Conn, cookie []byte, self Hello, deadline time.Time, verify func(*Hello) *Refusal) (Hello, error) {
	_ = conn.SetDeadline(deadline)
	defer conn.SetDeadline(time.Time{})
	var t Transcript
	self.Nonce = NewNonce()
	if err := WriteMsg(conn, &t, ClientHello(&self)); err != nil {
		return Hello{}, hsErr("send hello", err)
	}
	msg, err := ReadMsg(conn, &t)
	if err != nil {
		return Hello{}, hsErr("read server hello", err)
	}
	d := Dec{B: msg}
	switch st := d.U8("status"); {
	case d.Err != nil:
		return Hello{}, hsErr("server hello", d.Err)
	case st == HsRefused:
		return Hello{}, refused(ReadRefusal(&d))
	case st != HsOK:
		return Hello{}, fmt.Errorf("%w: server hello: status %d", ErrHandshake, st)
	}
	srv := ReadHello(&d)
	// Check what the server claims before proving anything to it.
	var r *Refusal
	switch {
	case d.Err != nil:
		r = Refuse(CodeMalformed, "malformed server hello: %v", d.Err)
	case !nodename.Valid(srv.Node):
		r = badName(srv.Node)
	case self.WantNode != "" && srv.Node != self.WantNode:
		r = Refuse(CodeWrongNode, "wrong node: wanted %q, reached %q", self.WantNode, srv.Node)
	case self.WantInc != 0 && srv.Inc != self.WantInc:
		r = Refuse(CodeStale, "stale incarnation: wanted %016x of %s, reached %016x", self.WantInc, srv.Node, srv.Inc)
	case verify != nil:
		r = verify(&srv)
	}
	if r != nil {
		_ = WriteMsg(conn, nil, RefusalMsg(HsRefused, r))
		return srv, refused(r)
	}
	proof := t.Mac(cookie, LabelClientProof, nil)
	if err := WriteMsg(conn, &t, append([]byte{HsOK}, proof...)); err != nil {
		return srv, hsErr("send proof", err)
	}
	msg, err = ReadMsg(conn, nil)
	if err != nil {
		return srv, hsErr("read verdict", err)
	}
	d = Dec{B: msg}
	switch st := d.U8("status"); {
	case d.Err != nil:
		return srv, hsErr("verdict", d.Err)
	case st == HsOK:
		if len(d.B) != MacSize || !hmac.Equal(d.B, t.Mac(cookie, LabelServerVerdict, msg[:1])) {
			return srv, refused(Refuse(CodeBadCookie, "bad cookie: the server could not prove it knows the cookie"))
		}
		return srv, nil
	case st == HsRefused:
		return srv, refused(ReadRefusal(&d))
	case st == HsRefusedAuth && len(msg) > MacSize:
		body, mac := msg[:len(msg)-MacSize], msg[len(msg)-MacSize:]
		d.B = d.B[:len(d.B)-MacSize]
		r := ReadRefusal(&d)
		if d.Err == nil && len(d.B) == 0 && hmac.Equal(mac, t.Mac(cookie, LabelServerVerdict, body)) {
			r.Authenticated = true
		} else {
			r.Reason += " (its proof did not verify: not acted upon)"
		}
		return srv, refused(r)
	}
	return srv, fmt.Errorf("%w: malformed verdict (status %d, %d bytes)", ErrHandshake, msg[0], len(msg))
}

// ServerHandshake runs the accepting side (SPEC.md, Handshake) until
// deadline. It says nothing that depends on the cookie until the client
// has proved it; then admit decides (nil: welcome; a refusal is sent
// with this side's MAC over it). It returns the client's hello as far as
// it was read, with an error when the link is not up.
func ServerHandshake(conn net.Conn, cookie []byte, self Hello, deadline time.Time, admit func(*Hello) *Refusal) (Hello, error) {
	_ = conn.SetDeadline(deadline)
	defer conn.SetDeadline(time.Time{})
	var t Transcript
	msg, err := ReadMsg(conn, &t)
	if err != nil {
		if errors.Is(err, errOversized) {
			return Hello{}, fmt.Errorf("%w: not a mailroom peer (%w)", ErrHandshake, err)
		}
		return Hello{}, hsErr("read client hello", err)
	}
	if len(msg) < 6 || [4]byte(msg[:4]) != ProtoMagic {
		// Not our protocol: say nothing a scanner could use.
		return Hello{}, fmt.Errorf("%w: not a mailroom peer (bad magic)", ErrHandshake)
	}
	reject := func(status uint8, cli Hello, r *Refusal) (Hello, error) {
		body := RefusalMsg(status, r)
		if status == HsRefusedAuth {
			body = append(body, t.Mac(cookie, LabelServerVerdict, body)...)
		}
		_ = WriteMsg(conn, nil, body)
		return cli, refused(r)
	}
	if v := binary.BigEndian.Uint16(msg[4:6]); v != ProtocolVersion {
		r := Refuse(CodeVersion, "protocol version %d not supported; this node speaks %d", v, ProtocolVersion)
		if v < 3 {
			// Versions 1 and 2 read a refusal as status ‖ string reason.
			_ = WriteMsg(conn, nil, AppendString([]byte{HsRefused}, r.Reason))
			return Hello{}, refused(r)
		}
		return reject(HsRefused, Hello{}, r)
	}
	d := Dec{B: msg[6:]}
	cli := ReadHello(&d)
	if d.Err != nil {
		return reject(HsRefused, cli, Refuse(CodeMalformed, "malformed hello: %v", d.Err))
	}
	// A name a peer chose reaches log lines, metric labels and error
	// texts: one off the rule is refused before anything is done with it.
	if !nodename.Valid(cli.Node) {
		return reject(HsRefused, cli, badName(cli.Node))
	}
	// The server hello proves nothing: it holds no value derived from the
	// cookie, so a client that has not proved the cookie gets nothing to
	// test guesses against.
	self.Nonce = NewNonce()
	if err := WriteMsg(conn, &t, AppendHello([]byte{HsOK}, &self)); err != nil {
		return cli, hsErr("send hello", err)
	}
	want := t.Mac(cookie, LabelClientProof, nil)
	msg, err = ReadMsg(conn, &t)
	if err != nil {
		return cli, hsErr("read client proof", err)
	}
	d = Dec{B: msg}
	switch st := d.U8("status"); {
	case d.Err != nil:
		return reject(HsRefused, cli, Refuse(CodeMalformed, "empty proof message"))
	case st == HsRefused:
		return cli, refused(ReadRefusal(&d))
	case st != HsOK:
		return reject(HsRefused, cli, Refuse(CodeMalformed, "bad proof status %d", st))
	}
	if len(d.B) != MacSize || !hmac.Equal(d.B, want) {
		return reject(HsRefused, cli, Refuse(CodeBadCookie, "bad cookie: the client could not prove it knows the cookie"))
	}
	// The client proved the cookie: its hello may now change this node's
	// state (admit registers the link), and what this side says from here
	// on carries its own MAC.
	if r := admit(&cli); r != nil {
		return reject(HsRefusedAuth, cli, r)
	}
	if err := WriteMsg(conn, nil, append([]byte{HsOK}, t.Mac(cookie, LabelServerVerdict, []byte{HsOK})...)); err != nil {
		return cli, hsErr("send welcome", err)
	}
	return cli, nil
}
