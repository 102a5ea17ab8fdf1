package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// fakeServer listens and runs serve on every connection, one at a time:
// a seed address taken over by someone without the cookie.
func fakeServer(t *testing.T, serve func(conn net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			serve(c)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// readClientHello reads a dialer's first message into t and decodes it.
func readClientHello(t *testing.T, conn net.Conn, tr *wire.Transcript) wire.Hello {
	t.Helper()
	msg, err := wire.ReadMsg(conn, tr)
	require.NoError(t, err)
	require.Equal(t, wire.ProtoMagic[:], msg[:4])
	d := wire.Dec{B: msg[6:]}
	h := wire.ReadHello(&d)
	require.NoError(t, d.Err)
	return h
}

// TestAForgedDeclaredDeadRefusalIsIgnored: a listener at an address the
// node dials answers its hello with "your incarnation was declared dead",
// built from the node's own hello: before its server hello (no proof at
// all), in the version 2 text format, and after the node's proof with a
// MAC it cannot compute. Version 2 nodes believed it and stopped. The
// node must stay up, report a handshake failure, and keep serving a
// legitimate peer both ways.
func TestAForgedDeclaredDeadRefusalIsIgnored(t *testing.T) {
	victimSys, victim, logs := startNode(t, "victim", Config{})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	healthy(t, good, "victim")

	deadReason := func(h wire.Hello) string {
		return fmt.Sprintf("incarnation %016x of %s was declared dead", h.Inc, h.Node)
	}
	attacks := map[string]func(conn net.Conn){
		"refused at once": func(conn net.Conn) {
			var tr wire.Transcript
			h := readClientHello(t, conn, &tr)
			_ = wire.WriteMsg(conn, nil, wire.RefusalMsg(wire.HsRefused, wire.Refuse(wire.CodeDeclaredDead, "%s", deadReason(h))))
		},
		"refused in the version 2 format": func(conn net.Conn) {
			var tr wire.Transcript
			h := readClientHello(t, conn, &tr)
			_ = wire.WriteMsg(conn, nil, wire.AppendString([]byte{wire.HsRefused}, deadReason(h)))
		},
		"refused after the proof with a forged MAC": func(conn net.Conn) {
			var tr wire.Transcript
			h := readClientHello(t, conn, &tr)
			srv := wire.Hello{Node: h.WantNode, Inc: 42, Addr: "127.0.0.1:1", Nonce: wire.NewNonce()}
			require.NoError(t, wire.WriteMsg(conn, &tr, wire.AppendHello([]byte{wire.HsOK}, &srv)))
			if _, err := wire.ReadMsg(conn, &tr); err != nil {
				return
			}
			body := wire.RefusalMsg(wire.HsRefusedAuth, wire.Refuse(wire.CodeDeclaredDead, "%s", deadReason(h)))
			forged := make([]byte, wire.MacSize)
			_, _ = rand.Read(forged)
			_ = wire.WriteMsg(conn, nil, append(body, forged...))
		},
	}
	i := 0
	for name, attack := range attacks {
		t.Run(name, func(t *testing.T) {
			i++
			seed := fmt.Sprintf("seed-%d", i)
			addr := fakeServer(t, attack)
			err := victim.Connect(context.Background(), seed, addr)
			require.ErrorIs(t, err, ErrHandshake)
			require.ErrorIs(t, err, actor.ErrUnreachable)
			require.Equal(t, actor.NotExecuted, actor.Outcome(err))
			t.Logf("the node's dial failed with: %v", err)

			require.False(t, victim.deadOnce.Load(), "the node did not stop itself")
			require.False(t, victimSys.Stopping())
			healthy(t, good, "victim")
			_, err = victimSys.Call(context.Background(), "good", "echo", &testpb.Echo{Text: "back"})
			require.NoError(t, err, "the node still calls out")
		})
	}
	require.NotContains(t, logs.String(), "declared dead by the cluster")
}

// TestAnAuthenticatedDeclaredDeadRefusalStopsTheNode: the same refusal
// from a node that holds the cookie (its MAC verifies) is evidence: a
// node whose incarnation the cluster declared dead stops itself.
func TestAnAuthenticatedDeclaredDeadRefusalStopsTheNode(t *testing.T) {
	_, victim, _ := startNode(t, "victim", Config{})
	thawed, thawedNode, logs := startNode(t, "thawed", Config{})
	// The victim learns from discovery that thawed's incarnation is down.
	victim.onMember(discovery.Event{Type: discovery.MemberDown, Member: discovery.Member{Node: "thawed", Incarnation: thawed.Incarnation()}})
	err := thawedNode.Connect(context.Background(), "victim", victim.Addr())
	require.ErrorIs(t, err, ErrHandshake)
	var r *wire.Refusal
	require.ErrorAs(t, err, &r)
	require.Equal(t, wire.CodeDeclaredDead, r.Code)
	require.True(t, r.Authenticated, "%v", err)
	select {
	case <-thawed.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the node declared dead did not stop itself")
	}
	require.Contains(t, logs.String(), "declared dead by the cluster")
}

// TestAClientThatNeverProvesGetsNothingToTestGuessesAgainst: whoever
// connects gets the server's hello and nonce, and, with a wrong proof, a
// refusal; every byte the server sent is accounted for by those fields,
// and no MAC under the real cookie appears in them, so even a guesser
// holding the right cookie could not confirm it offline.
func TestAClientThatNeverProvesGetsNothingToTestGuessesAgainst(t *testing.T) {
	sys, victim, logs := startNode(t, "victim", Config{})
	conn, err := net.Dial("tcp", victim.Addr())
	require.NoError(t, err)
	defer conn.Close()
	var tr wire.Transcript
	require.NoError(t, wire.WriteMsg(conn, &tr, wire.ClientHello(&wire.Hello{Node: "guesser", Inc: 9, Addr: "127.0.0.1:1", Nonce: wire.NewNonce()})))

	s1, err := wire.ReadMsg(conn, &tr)
	require.NoError(t, err)
	d := wire.Dec{B: s1}
	require.Equal(t, wire.HsOK, d.U8("status"))
	srv := wire.ReadHello(&d) // fails on trailing bytes
	require.NoError(t, d.Err)
	require.Equal(t, wire.AppendHello([]byte{wire.HsOK}, &srv), s1, "the server hello is its fields and nothing else")
	require.Equal(t, "victim", srv.Node)
	require.Equal(t, sys.Incarnation(), srv.Inc)

	// A guessed proof.
	guess := (&wire.Transcript{}).Mac([]byte("a-guessed-cookie-0123456789"), wire.LabelClientProof, nil)
	require.NoError(t, wire.WriteMsg(conn, &tr, append([]byte{wire.HsOK}, guess...)))
	s2, err := wire.ReadMsg(conn, nil)
	require.NoError(t, err)
	d = wire.Dec{B: s2}
	require.Equal(t, wire.HsRefused, d.U8("status"), "not authenticated: the client has not proved")
	r := wire.ReadRefusal(&d)
	require.Equal(t, wire.CodeBadCookie, r.Code)
	require.Empty(t, d.B, "no MAC follows the refusal")
	assertClosedByPeer(t, conn)

	sent := append(append([]byte(nil), s1...), s2...)
	cookie := []byte(testCookie)
	for _, label := range []string{wire.LabelClientProof, wire.LabelServerVerdict} {
		for _, tail := range [][]byte{nil, {wire.HsOK}, {wire.HsRefused}} {
			for cut := 0; cut <= len(tr); cut++ {
				require.False(t, bytes.Contains(sent, tr[:cut].Mac(cookie, label, tail)), "the server sent a MAC under the cookie")
			}
		}
	}
	waitFor(t, "the refusal logged", func() bool { return strings.Contains(logs.String(), "could not prove it knows the cookie") })
}

// TestTheDialerProvesFirstAndChecksTheServersProof: a listener without
// the cookie that a node dials gets the node's hello and proof (the
// proof is over the whole transcript, under the client label); whatever
// it answers, its own proof is checked: a verdict MAC it made up, or the
// node's own proof reflected back, is refused and no link comes up.
func TestTheDialerProvesFirstAndChecksTheServersProof(t *testing.T) {
	_, victim, _ := startNode(t, "victim", Config{})
	for _, reflect := range []bool{false, true} {
		var proof, expected []byte
		addr := fakeServer(t, func(conn net.Conn) {
			var tr wire.Transcript
			h := readClientHello(t, conn, &tr)
			srv := wire.Hello{Node: h.WantNode, Inc: 42, Addr: "127.0.0.1:1", Nonce: wire.NewNonce()}
			require.NoError(t, wire.WriteMsg(conn, &tr, wire.AppendHello([]byte{wire.HsOK}, &srv)))
			expected = tr.Mac([]byte(testCookie), wire.LabelClientProof, nil)
			msg, err := wire.ReadMsg(conn, &tr)
			require.NoError(t, err)
			require.Equal(t, wire.HsOK, msg[0])
			proof = msg[1:]
			verdict := make([]byte, wire.MacSize)
			if reflect {
				copy(verdict, proof)
			} else {
				_, _ = rand.Read(verdict)
			}
			_ = wire.WriteMsg(conn, nil, append([]byte{wire.HsOK}, verdict...))
		})
		node := fmt.Sprintf("fake-%v", reflect)
		err := victim.Connect(context.Background(), node, addr)
		require.ErrorIs(t, err, ErrHandshake)
		require.ErrorContains(t, err, "the server could not prove it knows the cookie")
		require.Equal(t, expected, proof, "the dialer's proof covers the transcript, under the client label")
		_, up := victim.Peer(node)
		require.False(t, up, "no link to a server that did not prove the cookie")
	}
}

// TestARefusedHandshakeIsErrHandshake: every way a handshake fails wraps
// ErrHandshake, next to ErrUnreachable for the caller (not executed).
func TestARefusedHandshakeIsErrHandshake(t *testing.T) {
	victimSys, victim, _ := startNode(t, "victim", Config{})
	ctx := context.Background()
	check := func(err error, want string) {
		t.Helper()
		require.ErrorIs(t, err, ErrHandshake)
		require.ErrorIs(t, err, actor.ErrUnreachable)
		require.Equal(t, actor.NotExecuted, actor.Outcome(err))
		require.ErrorContains(t, err, want)
	}
	// Refused by the peer, authenticated: a node with the victim's name.
	_, clash, _ := startNode(t, "victim", Config{})
	check(clash.Connect(ctx, "victim", victim.Addr()), "name clash")
	// Refused by the peer, unauthenticated: the wrong cookie.
	_, intruder, _ := startNode(t, "intruder", Config{Cookie: "another-cookie-0123456789"})
	check(intruder.Connect(ctx, "victim", victim.Addr()), "bad cookie")
	// Refused by the dialer: the wrong node at that address.
	_, other, _ := startNode(t, "other", Config{})
	check(other.Connect(ctx, "not-victim", victim.Addr()), "wrong node")
	// A pool link refused by the peer.
	_, pooler, _ := startNode(t, "pooler", Config{})
	require.NoError(t, pooler.Connect(ctx, "victim", victim.Addr()))
	_, err := pooler.dial.pool(ctx, "victim", victimSys.Incarnation(), 4096)
	check(err, "out of range")
	// TLS that fails.
	ca := newTestCA(t)
	_, tlsNode, _ := startNode(t, "tls", ca.tlsConfig(t, "tls"))
	check(tlsNode.Connect(ctx, "victim", victim.Addr()), "tls")
	require.False(t, errors.Is(victim.Connect(ctx, "nobody", "127.0.0.1:1"), ErrHandshake), "a refused TCP connection is no handshake")
}

// BenchmarkGuessAgainstAClientProof is the attacker's side of the one
// value a node gives away before its peer proved the cookie: the proof it
// sends to whatever answers at an address it dials. Each guess is one
// HMAC over a real-sized transcript; guesses/s per core bound how fast a
// cookie can be searched offline (docs/SECURITY.md).
//
//	go test -run '^$' -bench GuessAgainstAClientProof ./remote
func BenchmarkGuessAgainstAClientProof(b *testing.B) {
	var tr wire.Transcript
	tr.Add(wire.ClientHello(&wire.Hello{Node: "orders-1", Inc: 1, PoolSize: 8, WantNode: "billing-1", Addr: "10.0.0.5:7400", LinkID: 1, Nonce: wire.NewNonce()}))
	tr.Add(wire.AppendHello([]byte{wire.HsOK}, &wire.Hello{Node: "billing-1", Inc: 2, PoolSize: 8, Addr: "10.0.0.6:7400", Nonce: wire.NewNonce()}))
	proof := tr.Mac([]byte(testCookie), wire.LabelClientProof, nil)
	guess := []byte("guess-000000000000")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		guess[len(guess)-1] = byte(i)
		if bytes.Equal(tr.Mac(guess, wire.LabelClientProof, nil), proof) {
			b.Fatal("guessed")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "guesses/s")
}
