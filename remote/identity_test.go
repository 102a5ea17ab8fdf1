package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// TestAHelloClaimingALiveNodeDoesNotGetItDeclaredDead: a cookie holder
// sends a hello naming "legit" with a new incarnation while legit's
// links are up. Version 2 declared the real legit dead, refused it and
// told it so, and legit stopped itself. The claim must be refused as
// retryable (still connected), and legit keep its place both ways.
func TestAHelloClaimingALiveNodeDoesNotGetItDeclaredDead(t *testing.T) {
	victimSys, victim, _ := startNode(t, "victim", Config{})
	legitSys, legit, _ := startNode(t, "legit", Config{})
	ctx := context.Background()
	require.NoError(t, legit.Connect(ctx, "victim", victim.Addr()))
	healthy(t, legitSys, "victim")
	healthy(t, victimSys, "legit") // the victim dials legit back at its hello's address

	for _, role := range []uint8{wire.RoleNative, wire.RolePool} {
		conn, err := net.Dial("tcp", victim.Addr())
		require.NoError(t, err)
		_, err = wire.ClientHandshake(conn, []byte(testCookie), wire.Hello{Role: role, Node: "legit", Inc: legitSys.Incarnation() ^ 0xbad, Addr: "127.0.0.1:1"}, soon(), nil)
		conn.Close()
		var r *wire.Refusal
		require.ErrorAs(t, err, &r)
		require.Equal(t, wire.CodeStillConnected, r.Code, "%v", err)
		require.True(t, r.Authenticated)
		t.Logf("the impostor was told: %v", err)
	}

	info, ok := victim.Peer("legit")
	require.True(t, ok)
	require.Equal(t, legitSys.Incarnation(), info.Incarnation)
	require.Equal(t, legit.Addr(), info.Addr)
	victim.mu.Lock()
	require.Empty(t, victim.slots["legit"].tomb, "nothing was declared dead")
	victim.mu.Unlock()
	require.False(t, legit.deadOnce.Load())
	healthy(t, legitSys, "victim")
	healthy(t, victimSys, "legit")
	// legit can still open links to the victim.
	pl, err := legit.dial.pool(ctx, "victim", victimSys.Incarnation(), 0)
	require.NoError(t, err)
	pl.Close(errors.New("test over"))
}

// TestAPeerRestartedOnANewAddressIsCalledThere: a peer that only ever
// dialed us stops and comes back under the same name on another address.
// Version 2 kept dialing its old address (Peer showed the new
// incarnation with the old address). The address in the new
// incarnation's authenticated hello replaces the stale one.
func TestAPeerRestartedOnANewAddressIsCalledThere(t *testing.T) {
	victimSys, victim, _ := startNode(t, "victim", Config{})
	ctx := context.Background()
	first, firstNode, _ := startNode(t, "legit", Config{})
	require.NoError(t, firstNode.Connect(ctx, "victim", victim.Addr()))
	healthy(t, victimSys, "legit")
	require.NoError(t, first.Stop(ctx))
	waitFor(t, "the first incarnation gone", func() bool { _, ok := victim.Peer("legit"); return !ok })

	second, secondNode, _ := startNode(t, "legit", Config{})
	require.NotEqual(t, firstNode.Addr(), secondNode.Addr())
	require.NoError(t, secondNode.Connect(ctx, "victim", victim.Addr()))
	info, ok := victim.Peer("legit")
	require.True(t, ok)
	require.Equal(t, second.Incarnation(), info.Incarnation)
	require.Equal(t, secondNode.Addr(), info.Addr, "the new incarnation's address")
	// The victim has no link of its own to the new incarnation: the call
	// dials it, at the new address.
	v, err := victimSys.Call(ctx, "legit", "echo", &testpb.Echo{Text: "again"})
	require.NoError(t, err)
	require.Equal(t, "echo again", v.(*testpb.Echo).Text)
}

// TestTLSBindsNamesToCertificates: with TLS, the name a node claims must
// be in its certificate, on both sides.
func TestTLSBindsNamesToCertificates(t *testing.T) {
	ca := newTestCA(t)
	ctx := context.Background()
	aSys, a, logs := startNode(t, "a", ca.tlsConfig(t, "a"))
	b, bNode, _ := startNode(t, "b", ca.tlsConfig(t, "b"))
	require.NoError(t, bNode.Connect(ctx, "a", a.Addr()))
	healthy(t, b, "a")
	healthy(t, aSys, "b")

	t.Run("a dialer whose certificate names another node", func(t *testing.T) {
		// mallory holds a valid certificate, for "evil", and claims "mallory".
		_, mallory, _ := startNode(t, "mallory", ca.tlsConfig(t, "evil"))
		err := mallory.Connect(ctx, "a", a.Addr())
		require.ErrorIs(t, err, ErrHandshake)
		var r *wire.Refusal
		require.ErrorAs(t, err, &r)
		require.Equal(t, wire.CodeIdentity, r.Code, "%v", err)
		require.ErrorContains(t, err, `names DNS:evil, not node "mallory"`)
		waitFor(t, "a logged the refusal", func() bool { return strings.Contains(logs.String(), "identity") })
		_, known := a.Peer("mallory")
		require.False(t, known)
		// Claiming to be b with it is refused too, and b keeps its place.
		conn, err := tls.Dial("tcp", a.Addr(), mallory.cfg.tlsForTest("a"))
		require.NoError(t, err)
		_, err = wire.ClientHandshake(conn, []byte(testCookie), wire.Hello{Node: "b", Inc: 99, Addr: "127.0.0.1:1"}, soon(), nil)
		conn.Close()
		require.ErrorAs(t, err, &r)
		require.Equal(t, wire.CodeIdentity, r.Code, "%v", err)
		info, _ := a.Peer("b")
		require.Equal(t, b.Incarnation(), info.Incarnation)
		healthy(t, b, "a")
	})

	t.Run("a server whose certificate names another node", func(t *testing.T) {
		// A listener with a valid certificate for "evil" claims to be "c".
		// The dialer checks the certificate before it proves anything: no
		// proof to attack offline reaches the listener.
		srvTLS, _ := ca.configs(t, "evil")
		ln, err := tls.Listen("tcp", "127.0.0.1:0", srvTLS)
		require.NoError(t, err)
		defer ln.Close()
		var got []byte
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			var tr wire.Transcript
			h := readClientHello(t, conn, &tr)
			srv := wire.Hello{Node: h.WantNode, Inc: 5, Addr: "127.0.0.1:1", Nonce: wire.NewNonce()}
			if wire.WriteMsg(conn, &tr, wire.AppendHello([]byte{wire.HsOK}, &srv)) == nil {
				got, _ = wire.ReadMsg(conn, nil)
			}
		}()
		// The dialer verifies TLS for the name "evil" (a configured
		// ServerName): TLS passes, the name check does not.
		cfg := ca.tlsConfig(t, "d")
		cfg.TLSClient.ServerName = "evil"
		_, d, _ := startNode(t, "d", cfg)
		err = d.Connect(ctx, "c", ln.Addr().String())
		wg.Wait()
		require.ErrorIs(t, err, ErrHandshake)
		require.ErrorContains(t, err, `names DNS:evil, not node "c"`)
		require.NotEmpty(t, got)
		require.Equal(t, wire.HsRefused, got[0], "the dialer refused instead of proving")
		d2 := wire.Dec{B: got[1:]}
		require.Equal(t, wire.CodeIdentity, wire.ReadRefusal(&d2).Code)
	})

	t.Run("a server certificate that does not name the node wanted fails TLS", func(t *testing.T) {
		_, e, _ := startNode(t, "e", ca.tlsConfig(t, "not-e"))
		err := bNode.Connect(ctx, "e", e.Addr())
		require.ErrorIs(t, err, ErrHandshake)
		require.ErrorContains(t, err, "tls")
	})
}

// tlsForTest is the node's client TLS configuration for dialing node.
func (c Config) tlsForTest(node string) *tls.Config {
	cfg := c.TLSClient.Clone()
	cfg.ServerName = node
	return cfg
}

// TestVerifyPeerReplacesTheNameCheck: the hook is called on both sides
// with the name the peer claims, and its error refuses the link.
func TestVerifyPeerReplacesTheNameCheck(t *testing.T) {
	ca := newTestCA(t)
	var mu sync.Mutex
	seen := map[string][]string{}
	hook := func(self string) func(string, tls.ConnectionState) error {
		return func(node string, st tls.ConnectionState) error {
			mu.Lock()
			seen[self] = append(seen[self], node)
			mu.Unlock()
			if node == "banned" {
				return fmt.Errorf("%s is banned", node)
			}
			return nil
		}
	}
	// Certificates without the node names: the hook decides alone.
	withHook := func(self string) Config {
		cfg := ca.tlsConfig(t, "cluster.internal")
		cfg.TLSClient.ServerName = "cluster.internal"
		cfg.VerifyPeer = hook(self)
		return cfg
	}
	_, a, _ := startNode(t, "a", withHook("a"))
	b, bNode, _ := startNode(t, "b", withHook("b"))
	require.NoError(t, bNode.Connect(context.Background(), "a", a.Addr()))
	healthy(t, b, "a")
	_, banned, _ := startNode(t, "banned", withHook("banned"))
	err := banned.Connect(context.Background(), "a", a.Addr())
	require.ErrorIs(t, err, ErrHandshake)
	require.ErrorContains(t, err, "banned is banned")
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, seen["b"], "a", "the dialer checked the server")
	require.Contains(t, seen["a"], "b", "the server checked the dialer")
	require.Contains(t, seen["a"], "banned")
}
