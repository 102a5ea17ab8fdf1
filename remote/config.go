package remote

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"go.opentelemetry.io/otel/trace"
)

// PoolDisabled as Config.PoolSize starts no receiver pool: other nodes
// cannot build pools toward this one (they reach it natively) while it
// still uses theirs. Peers see discovery.NoReceiverPool as its
// PeerInfo.PoolWorkers.
const PoolDisabled = -1

// Config configures a node's remote layer. Zero fields take the defaults
// documented on each (DefaultConfig).
type Config struct {
	// Listen is the TCP address to listen on. Default "127.0.0.1:0".
	Listen string
	// Advertise is the address other nodes dial to reach this one, sent in
	// the handshake and to discovery. Default: the listener's address.
	Advertise string
	// Cookie is the shared secret every node of the cluster holds. Links
	// are authenticated both ways with HMAC-SHA256 proofs over it (the
	// dialer proves first; SPEC.md); it never crosses the wire. Required,
	// at least 16 bytes: make one with NewCookie. Anyone who gets a node
	// to dial it receives a proof to test cookie guesses against offline,
	// so the cookie must be a long random secret, not a word.
	Cookie string
	// InsecureShortCookie lets Start accept a Cookie shorter than 16
	// bytes. For tests only: a short cookie falls to an offline search in
	// seconds.
	InsecureShortCookie bool
	// TLSServer and TLSClient, when set, wrap every link in TLS (both must
	// be set together), and bind node names to certificates: the name a
	// peer claims in its hello must be a DNS SAN (or the text of a URI
	// SAN) of its verified certificate, checked on both sides before the
	// link is up. TLSServer.ClientAuth must then be
	// tls.RequireAndVerifyClientCert (unless VerifyPeer is set), and
	// every node needs a certificate usable for both client and server
	// authentication. When TLSClient.ServerName is empty, each dial
	// verifies the server's certificate for the node name it wants.
	// Without TLS, a node name is only a claim: any holder of the cookie
	// can claim any name.
	TLSServer *tls.Config
	TLSClient *tls.Config
	// VerifyPeer, with TLS, replaces the default name check: it is called
	// on both sides of every handshake with the node name the peer claims
	// and the TLS state (after TLS has verified the chain as configured),
	// before this side proves anything (dialing) or admits the link
	// (accepting); an error refuses the link. It runs on the handshake's
	// goroutine, concurrently with other handshakes. Default: nil.
	VerifyPeer func(node string, state tls.ConnectionState) error
	// Discovery reports the other nodes. Default: a Static provider over
	// Seeds.
	//
	// What the node does with what discovery reports: it learns each
	// member's address (and, from Consul, its incarnation: a newer one
	// ends the older, a member reported down is gone, its calls fail and
	// the node stops dialling that address). It links to a member on the
	// first Send, Request, Cast or Call to it, or on Connect; a proxy pool
	// (proxypool) links to every member that comes up. With a Static
	// provider (the default, or a *discovery.Static given here) the node
	// also keeps a native link to every seed, and so it does to every
	// member another provider lists with Incarnation 0 (discovery.DNS's
	// targets) for as long as it lists it: it dials each at start,
	// redials while it is unreachable (backoff from 100 ms doubling to
	// 5 s, jittered) and relinks when the link closes, whether the seed
	// restarted (a new incarnation) or the network failed; it dials at
	// once, backoff reset, on news of the seed (a link of it up or down).
	// A seed's liveness is judged by its links' heartbeats alone. A
	// seed's configured address is always dialled first; when that fails,
	// the address the seed announced in the hello of a link it dialled to
	// this node is dialled next (a seed restarted on a new port), never in
	// its place (behind a proxy or NAT the announced address may not be
	// the one that works from here). Node.WaitPeer documents the rule.
	Discovery discovery.Provider
	// Seeds, "name=host:port", feed the default Static provider. A seed
	// naming this node is skipped, so every node can share one list.
	Seeds []string
	// ManualConnect, when true, does not keep links to seeds (a Static
	// provider's, or the members another lists with Incarnation 0, such
	// as discovery.DNS's): links come from the first message to a node or
	// from Connect. Default false.
	ManualConnect bool
	// HandshakeTimeout bounds a whole handshake, TLS included: from the
	// accepted connection (or, dialing, from the connection made) to the
	// link being up. An accepted connection that sends nothing within a
	// fifth of it (at most a second) is closed then. Default 5s.
	HandshakeTimeout time.Duration
	// DialTimeout bounds connecting to a peer. Default 5s.
	DialTimeout time.Duration
	// LinkBufferBytes is how many encoded bytes may wait for one link's
	// writer; beyond it senders wait (SendPolicy Block) or fail with
	// actor.ErrOverloaded (FailFast). Default 4 MiB.
	LinkBufferBytes int
	// SendPolicy applies to Send and Cast on a full link. Default Block.
	SendPolicy actor.MailboxPolicy
	// PoolSize is the number of receiver pool workers this node runs:
	// peers build one proxy per worker. 0 means the default, GOMAXPROCS;
	// PoolDisabled runs none. Peers see the number in effect as
	// PeerInfo.PoolWorkers (discovery.NoReceiverPool for none).
	PoolSize int
	// Network listens and dials; default TCP. Tests use an in-memory one.
	Network Network
	// Logger; default the system's.
	Logger *slog.Logger
	// TracerProvider, when set, makes OpenTelemetry spans for traced
	// traffic: a client (Call, Request) or producer (Send, Cast) span on
	// the caller, a server or consumer span on the receiver, its
	// handler's context holding it. Traffic is traced when the caller's
	// ctx holds a valid span (Call, Request, System.SendContext,
	// System.CastContext, or anything an actor sends while it handles a
	// traced message); mailroom never starts a trace itself. Without a
	// provider the trace context is still carried and continued (the
	// handler's context holds the remote span context), and no span is
	// made. Default nil. README, "Tracing".
	TracerProvider trace.TracerProvider

	// Liveness says when a link, a peer or a node name is given up on:
	// heartbeats, idle links, forgotten names. Zero fields take the
	// defaults documented on each (DefaultLiveness).
	Liveness Liveness
	// Limits bound what other nodes, before and after they prove the
	// cookie, can make this node run, allocate or keep. Zero fields take
	// the defaults documented on each (DefaultLimits).
	Limits Limits
}

// minCookieLen is the shortest cookie Start accepts without
// InsecureShortCookie.
const minCookieLen = 16

// NewCookie returns a new random cookie: 256 bits from crypto/rand,
// base64url-encoded (43 characters). Make one per cluster and give it to
// every node (an environment variable, a secret store).
func NewCookie() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// DefaultConfig returns the defaults (Cookie must still be set).
func DefaultConfig() Config {
	return Config{
		Listen:           "127.0.0.1:0",
		HandshakeTimeout: 5 * time.Second,
		DialTimeout:      5 * time.Second,
		LinkBufferBytes:  4 << 20,
		SendPolicy:       actor.Block,
		PoolSize:         runtime.GOMAXPROCS(0),
		Liveness:         DefaultLiveness(),
		Limits:           DefaultLimits(),
	}
}

func (c Config) withDefaults(sys *actor.System) (Config, error) {
	d := DefaultConfig()
	if c.Listen == "" {
		c.Listen = d.Listen
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = d.HandshakeTimeout
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = d.DialTimeout
	}
	if c.LinkBufferBytes == 0 {
		c.LinkBufferBytes = d.LinkBufferBytes
	}
	if c.PoolSize == 0 {
		c.PoolSize = d.PoolSize
	}
	if c.Logger == nil {
		c.Logger = sys.Logger()
	}
	c.Liveness = c.Liveness.withDefaults()
	c.Limits = c.Limits.withDefaults(c.poolWorkers())
	if c.Network == nil {
		c.Network = &TCP{}
	}
	return c, c.validate()
}

func (c Config) validate() error {
	switch {
	case c.Cookie == "":
		return fmt.Errorf("remote: config: Cookie is empty; every node of a cluster needs the same secret cookie (remote.NewCookie makes one)")
	case len(c.Cookie) < minCookieLen && !c.InsecureShortCookie:
		return fmt.Errorf("remote: config: Cookie is %d bytes, want at least %d: a short cookie can be guessed offline (remote.NewCookie makes one; InsecureShortCookie allows it in tests)", len(c.Cookie), minCookieLen)
	case c.HandshakeTimeout < 0 || c.DialTimeout < 0:
		return fmt.Errorf("remote: config: HandshakeTimeout %v / DialTimeout %v: want positive durations", c.HandshakeTimeout, c.DialTimeout)
	case c.LinkBufferBytes < 0:
		return fmt.Errorf("remote: config: LinkBufferBytes is %d, want 0 (default) or more", c.LinkBufferBytes)
	case c.PoolSize < PoolDisabled || c.PoolSize > 4096:
		return fmt.Errorf("remote: config: PoolSize is %d, want a positive number up to 4096, 0 (GOMAXPROCS) or PoolDisabled (-1)", c.PoolSize)
	case (c.TLSServer == nil) != (c.TLSClient == nil):
		return fmt.Errorf("remote: config: TLSServer and TLSClient must be set together")
	case c.TLSServer != nil && c.VerifyPeer == nil && c.TLSServer.ClientAuth != tls.RequireAndVerifyClientCert:
		return fmt.Errorf("remote: config: TLSServer.ClientAuth is %v, want tls.RequireAndVerifyClientCert: a peer's node name is checked against its verified certificate (or set VerifyPeer)", c.TLSServer.ClientAuth)
	case c.VerifyPeer != nil && c.TLSServer == nil:
		return fmt.Errorf("remote: config: VerifyPeer is set without TLS: names can only be bound to certificates over TLS")
	case c.SendPolicy != actor.Block && c.SendPolicy != actor.FailFast:
		return fmt.Errorf("remote: config: SendPolicy is %d, want Block or FailFast", int(c.SendPolicy))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("remote: config: Listen %q: %w", c.Listen, err)
	}
	if err := c.Liveness.validate(); err != nil {
		return err
	}
	return c.Limits.validate()
}

// poolWorkers is the advertised receiver pool size (PeerInfo.PoolWorkers,
// discovery.Member.PoolWorkers): discovery.NoReceiverPool when disabled.
func (c Config) poolWorkers() int {
	if c.PoolSize == PoolDisabled {
		return discovery.NoReceiverPool
	}
	return c.PoolSize
}
