package wire

// Fuzz the decoders: go test -run '^$' -fuzz FuzzFrameDecoder -fuzztime 1m ./remote
// The seed corpus is in testdata/fuzz/<FuzzName>.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/nodename"
)

var fuzzEnds = Ends{SelfNode: "a", SelfInc: 1, PeerNode: "b", PeerInc: 2}

var seedTrace = Trace{
	ID:    [16]byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
	Span:  [8]byte{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
	Flags: 1,
	State: "vendor=opaque,other=1",
}

// seedFrames are valid frames of every kind, and a batch.
func seedFrames() [][]byte {
	pid := actor.PID{Node: "b", Incarnation: 2, ID: 7}
	other := actor.PID{Node: "c", Incarnation: 3, ID: 9}
	els := []Element{
		{Kind: KindSend, To: pid, Sender: other, Type: "t.M", Payload: []byte{1, 2}},
		{Kind: KindSend, ToName: "svc", Type: "t.M"},
		{Kind: KindCast, Fn: "f", Type: "t.M", Payload: []byte{3}},
		{Kind: KindCall, ID: 42, Deadline: 1e18, Fn: "f", Type: "t.M"},
		{Kind: KindRequest, ID: 43, To: pid, Sender: other, Type: "t.M"},
		{Kind: KindReply, ID: 42, Status: StatusOK, Type: "t.M", Payload: []byte{9}},
		{Kind: KindReply, ID: 42, Status: StatusRejected, Code: "c", Message: "m"},
		{Kind: KindCancel, ID: 42},
		{Kind: KindPing},
		{Kind: KindControl, Control: &Control{Op: CtlWatch, Watcher: other, Target: pid}},
		{Kind: KindControl, Control: &Control{Op: CtlTerminated, Watcher: other, Target: pid, Status: StatusPanic, Message: "x"}},
		{Kind: KindControl, Control: &Control{Op: CtlAnnounce, Draining: true, Meta: map[string]string{"k": "v"}}},
		{Kind: KindControl, Control: &Control{Op: CtlFence, Links: []uint64{3, 1 << 40}}},
		{Kind: KindControl, Control: &Control{Op: CtlIdleClose}},
		{Kind: KindGoodbye, Reason: "bye"},
		{Kind: KindSend, To: pid, Sender: other, Type: "t.M", Trace: seedTrace},
		{Kind: KindCall, ID: 44, Fn: "f", Type: "t.M", Trace: Trace{ID: seedTrace.ID, Span: seedTrace.Span, Flags: 1}},
	}
	var out [][]byte
	var batch []byte
	n := 0
	for i := range els {
		out = append(out, fuzzEnds.AppendFrame(nil, &els[i]))
		switch els[i].wireKind() {
		case KindSend, KindCast, KindCall, KindRequest, KindReply, KindCancel, KindTraced, KindHeadered:
			batch = fuzzEnds.appendElement(batch, &els[i])
			n++
		}
	}
	b, start := beginFrame(nil, KindBatch)
	b = AppendUvarint(b, uint64(n))
	b = append(b, batch...)
	out = append(out, endFrame(b, start))
	return out
}

// decodeStream decodes every frame in data the way a link does; it must
// never panic, whatever the bytes.
func decodeStream(data []byte) {
	fr := NewFrameReader(bytes.NewReader(data), 1<<20)
	for {
		k, body, err := fr.Next()
		if err != nil {
			return
		}
		if k == KindBatch {
			it, err := fuzzEnds.NewBatchIter(body)
			if err != nil {
				continue
			}
			var el Element
			for {
				ok, err := it.Next(&el)
				if err != nil || !ok {
					break
				}
				checkBounds(&el)
			}
			continue
		}
		var el Element
		if fuzzEnds.DecodeBody(k, body, &el) == nil {
			checkBounds(&el)
		}
		if fuzzEnds.DecodeBody(k, body, &el) == nil && k != KindControl {
			// A decoded element re-encodes to an equivalent body.
			again := fuzzEnds.AppendFrame(nil, &el)
			var el2 Element
			if err := fuzzEnds.DecodeBody(Kind(again[4]), again[5:], &el2); err != nil {
				panic("re-encoded frame does not decode: " + err.Error())
			}
		}
	}
}

// checkBounds asserts what version 5 bounds in a decoded element: the
// names a peer chooses, the node names of its PIDs, its error texts.
func checkBounds(el *Element) {
	for _, n := range []string{el.Type, el.Fn, el.ToName} {
		if len(n) > MaxNameLen {
			panic(fmt.Sprintf("a name of %d bytes decoded", len(n)))
		}
	}
	texts := []string{el.Code, el.Message, el.Reason}
	pids := []actor.PID{el.To, el.Sender}
	if c := el.Control; c != nil {
		texts = append(texts, c.Code, c.Message)
		pids = append(pids, c.Watcher, c.Target)
	}
	for _, t := range texts {
		if len(t) > MaxErrorText {
			panic(fmt.Sprintf("an error text of %d bytes decoded", len(t)))
		}
	}
	for _, p := range pids {
		if !p.IsZero() && !nodename.Valid(p.Node) {
			panic(fmt.Sprintf("a PID of node %q decoded", p.Node))
		}
	}
}

func FuzzFrameDecoder(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, data []byte) { decodeStream(data) })
}

func TestSeedFramesRoundTrip(t *testing.T) {
	for _, s := range seedFrames() {
		decodeStream(s)
	}
}

// pipeConn feeds scripted input to a handshake and records its output.
type pipeConn struct {
	r   io.Reader
	out bytes.Buffer
}

func (c *pipeConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *pipeConn) Write(p []byte) (int, error)      { return c.out.Write(p) }
func (c *pipeConn) Close() error                     { return nil }
func (c *pipeConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *pipeConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *pipeConn) SetDeadline(time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(time.Time) error { return nil }

// handshakeSeeds are protocol v3 handshakes from either side (SPEC.md):
// what a client sends (hello, proof, refusal) and what a server sends
// (hello, welcome, refusals with and without a MAC). The MACs are zeros:
// the fuzzer never knows the cookie.
func handshakeSeeds() [][]byte {
	h := Hello{Node: "x", Inc: 5, PoolSize: 2, WantNode: "srv", Addr: "127.0.0.1:1", LinkID: 3}
	msg := func(b []byte) []byte { return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...) }
	mac := make([]byte, MacSize)
	first := ClientHello(&h)
	old := append(append(ProtoMagic[:], 0, 2), AppendHello(nil, &h)...)
	proof := append([]byte{HsOK}, mac...)
	srvHello := AppendHello([]byte{HsOK}, &Hello{Node: "srv", Inc: 1, PoolSize: 4, Addr: "127.0.0.1:2"})
	dead := RefusalMsg(HsRefusedAuth, Refuse(CodeDeclaredDead, "incarnation 0000000000000005 of x was declared dead"))
	return [][]byte{
		// client side
		msg(first),
		msg(old),
		append(msg(first), msg(proof)...),
		append(msg(first), msg(RefusalMsg(HsRefused, Refuse(CodeWrongNode, "no")))...),
		// server side
		msg(srvHello),
		append(msg(srvHello), msg(proof)...),
		append(msg(srvHello), msg(append(dead, mac...))...),
		append(msg(srvHello), msg(RefusalMsg(HsRefused, Refuse(CodeBadCookie, "bad cookie")))...),
		msg(RefusalMsg(HsRefused, Refuse(CodeVersion, "no"))),
		// names off the rule, either side
		msg(ClientHello(&Hello{Node: "mallory\xff\xfe", Inc: 6, Addr: "127.0.0.1:1"})),
		msg(AppendHello([]byte{HsOK}, &Hello{Node: "srv with spaces", Inc: 1, Addr: "127.0.0.1:2"})),
	}
}

// firstHello decodes the hello in the first handshake message of b as a
// server reads it (after magic and version: client) or a client does
// (after the status: server); ok is false when it does not decode.
func firstHello(b []byte, client bool) (h Hello, ok bool) {
	if len(b) < 2 {
		return Hello{}, false
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b) < 2+n {
		return Hello{}, false
	}
	msg := b[2 : 2+n]
	skip := 1 // status
	if client {
		if len(msg) < 6 || [4]byte(msg[:4]) != ProtoMagic || binary.BigEndian.Uint16(msg[4:6]) != ProtocolVersion {
			return Hello{}, false
		}
		skip = 6
	} else if len(msg) < 1 || msg[0] != HsOK {
		return Hello{}, false
	}
	d := Dec{B: msg[skip:]}
	h = ReadHello(&d)
	return h, d.Err == nil
}

// messages splits b into the handshake messages it holds whole.
func messages(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 2 && len(b) >= 2+int(binary.BigEndian.Uint16(b)) {
		n := int(binary.BigEndian.Uint16(b))
		out = append(out, b[2:2+n])
		b = b[2+n:]
	}
	return out
}

// provingClient plays a client that holds the cookie: it sends the first
// message of data as its hello, and proves the cookie over whatever the
// server answers. What the server decides about that hello is then up to
// its checks alone.
type provingClient struct {
	pipeConn
	hello  []byte // the whole first message, length included
	stage  int
	answer []byte
}

func (c *provingClient) Read(p []byte) (int, error) {
	if len(c.answer) == 0 {
		switch c.stage {
		case 0:
			c.answer = c.hello
		case 1:
			// The server's hello has been written: prove over both.
			var tr Transcript
			tr.Add(c.hello[2:])
			out := c.out.Bytes()
			if len(out) < 2 || len(out) < 2+int(binary.BigEndian.Uint16(out)) {
				return 0, io.EOF
			}
			tr.Add(out[2 : 2+int(binary.BigEndian.Uint16(out))])
			proof := append([]byte{HsOK}, tr.Mac([]byte(testCookie), LabelClientProof, nil)...)
			c.answer = append(binary.BigEndian.AppendUint16(nil, uint16(len(proof))), proof...)
		default:
			return 0, io.EOF
		}
		c.stage++
	}
	n := copy(p, c.answer)
	c.answer = c.answer[n:]
	return n, nil
}

// FuzzHandshake feeds either side of a handshake scripted bytes from a
// peer that does not know the cookie: the handshake must never succeed,
// never panic, and never take a refusal as authenticated. A node name off
// the rule is refused (bad_name) before this side says anything else: a
// server sends no hello to it, a client no proof. And a client that
// proves the cookie with the same first message reaches admission only
// with a name that follows the rule.
func FuzzHandshake(f *testing.F) {
	for _, s := range handshakeSeeds() {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, data []byte, server bool) {
		conn := &pipeConn{r: bytes.NewReader(data)}
		self := Hello{Node: "srv", Inc: 1}
		deadline := time.Now().Add(time.Second)
		peer, decoded := firstHello(data, server)
		offRule := decoded && !nodename.Valid(peer.Node)
		if server {
			_, err := ServerHandshake(conn, []byte(testCookie), self, deadline, admitAll)
			if err == nil {
				t.Fatal("a handshake without the cookie succeeded")
			}
			if !errors.Is(err, ErrHandshake) {
				t.Fatalf("a handshake failure that is not ErrHandshake: %v", err)
			}
			if offRule {
				if r := (*Refusal)(nil); !errors.As(err, &r) || r.Code != CodeBadName {
					t.Fatalf("a hello from %q was not refused bad_name: %v", peer.Node, err)
				}
				if _, ok := firstHello(conn.out.Bytes(), false); ok {
					t.Fatalf("the server said hello to %q", peer.Node)
				}
			}
			// The same hello from a client that proves the cookie.
			if len(data) >= 2 && len(data) >= 2+int(binary.BigEndian.Uint16(data)) {
				pc := &provingClient{hello: data[:2+int(binary.BigEndian.Uint16(data))]}
				admitted := false
				_, err = ServerHandshake(pc, []byte(testCookie), self, deadline, func(h *Hello) *Refusal {
					if !nodename.Valid(h.Node) {
						t.Fatalf("admission reached with the node name %q", h.Node)
					}
					admitted = true
					return nil
				})
				if offRule && (admitted || err == nil) {
					t.Fatalf("a proved hello from %q was admitted", peer.Node)
				}
			}
			return
		}
		_, err := ClientHandshake(conn, []byte(testCookie), self, deadline, nil)
		if err == nil {
			t.Fatal("a server without the cookie was accepted")
		}
		if !errors.Is(err, ErrHandshake) {
			t.Fatalf("a handshake failure that is not ErrHandshake: %v", err)
		}
		if r := (*Refusal)(nil); errors.As(err, &r) && r.Authenticated {
			t.Fatalf("a refusal from a server without the cookie was taken as authenticated: %v", err)
		}
		if offRule {
			if r := (*Refusal)(nil); !errors.As(err, &r) || r.Code != CodeBadName {
				t.Fatalf("a server named %q was not refused bad_name: %v", peer.Node, err)
			}
			for i, m := range messages(conn.out.Bytes()) {
				if i > 0 && len(m) == 1+MacSize && m[0] == HsOK {
					t.Fatalf("the client proved the cookie to a server named %q", peer.Node)
				}
			}
		}
	})
}
