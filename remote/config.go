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
	// MaxFrameSize bounds one frame (a message, or a batch) in bytes; a
	// peer announcing more has its link closed before anything is
	// allocated. Default 64 MiB.
	MaxFrameSize int
	// HeartbeatInterval: an idle link sends a heartbeat this often.
	// Default 1s.
	HeartbeatInterval time.Duration
	// HeartbeatMisses: a link that has received nothing for this many
	// intervals is dead. Default 3.
	HeartbeatMisses int
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

	// Handshake limits. Until a peer has proved the cookie it costs this
	// node a goroutine, a socket and a few KiB, and anyone who can reach
	// the listener can make it pay: these bound how many such handshakes
	// run at once. At either bound the newcomer is admitted and the
	// slowest handshake not yet proved (of its address at the per-address
	// bound; of the addresses holding the most at the node-wide one) is
	// closed in its place, without a word, and counted
	// (Stats.HandshakesShed); so is a connection that sent nothing within
	// the first-byte deadline (HandshakeTimeout). Accept errors
	// (such as running out of file descriptors) back off from 5 ms,
	// doubling up to 1 s, reset by the next accepted connection, and are
	// logged at most once a second with the count of those suppressed.

	// MaxHandshakes bounds the handshakes in progress on this node.
	// Default 256.
	MaxHandshakes int
	// MaxHandshakesPerIP bounds the handshakes in progress from one
	// remote IP address, an IPv6 one by its /64 (nodes behind one
	// address, one host or a NAT, share it). Default 32.
	MaxHandshakesPerIP int

	// Limits on what an authenticated peer (a buggy or compromised node
	// that holds the cookie) can make this node run, allocate or keep.
	// Zero fields take the defaults; docs/SECURITY.md says what each one
	// stops and what happens at the bound.

	// MaxInflightPerPeer bounds the calls and casts of one peer
	// incarnation running here at once, over all its links (native and
	// pool). At the bound the readers of its links stop reading until
	// some end, so TCP pushes back on the peer; nothing is spawned or
	// queued beyond it. Default 4096.
	MaxInflightPerPeer int
	// MaxInflightBytesPerPeer bounds what the payloads of those calls and
	// casts decode into: an estimate from each type's schema, about the
	// payload's size for most types, more for payloads of many small
	// messages (docs/SECURITY.md, "Decoded size"). Default 64 MiB (at
	// least MaxMessageSize).
	MaxInflightBytesPerPeer int
	// MaxMessageSize bounds one message's payload (a send, cast, call,
	// request or reply), checked before it is decoded: a send or cast
	// over it is a counted dead letter, a call or request gets the error
	// reply bad_message, and the link stays up. So is a payload that
	// would decode into more than 16 times its size (beyond its message's
	// own struct), whatever its size. This node refuses to send
	// one too (actor.ErrBadMessage). Default 4 MiB, or MaxFrameSize if
	// that is smaller.
	MaxMessageSize int
	// ReadBudgetBytes bounds the bytes of frame buffers beyond 64 KiB per
	// link being read on every link of this node at once. Buffers grow
	// as bytes arrive; a reader that finds the budget spent waits for it
	// (TCP pushes back) at most HeartbeatInterval x HeartbeatMisses, then
	// its link closes. Default 4 x MaxFrameSize (256 MiB); at least
	// MaxFrameSize.
	ReadBudgetBytes int
	// MaxLinksPerPeer bounds the links one peer incarnation has dialed to
	// this node at once; more are refused in the handshake. Default
	// 2 x (PoolSize + 1) + 16.
	MaxLinksPerPeer int
	// MaxAnnounceBytes bounds one announcement (its encoded size) from a
	// peer; a larger one is ignored, logged and counted. Default 64 KiB.
	MaxAnnounceBytes int
	// MaxWatchesPerPeer bounds the watches one peer incarnation holds on
	// this node's actors; beyond it a watch is answered at once with a
	// termination whose reason is actor.ErrOverloaded. Default 65536.
	MaxWatchesPerPeer int
	// ForgetNodesAfter: a node name that discovery does not list and that
	// has had no link for this long is forgotten (its table entry, its
	// incarnation and whatever was kept for it). Default 5m.
	ForgetNodesAfter time.Duration
	// MaxNodes bounds the node names this node keeps, and a quarter of it
	// the names learned from the hellos of one source address (as for
	// MaxHandshakesPerIP). At either bound the names nothing keeps (no
	// live link, not listed by discovery, not connected to), the longest
	// unseen first, are forgotten to make room: at the quota the source's
	// own, at MaxNodes those of the source holding the most. A hello from
	// a new name is refused (too_many_nodes) only when none can be. Names
	// that discovery reports are always kept. Default 16384.
	MaxNodes int
	// LinkIdleTimeout: a native link this node dialed for traffic (the
	// first Send, Request, Cast, Call or Watch to a node) is closed once
	// it has carried nothing but heartbeats, in either direction, for this
	// long while nothing was pinned to it (calls or requests waiting,
	// watches either way, a pool toward the peer, or one being built).
	// The next message dials a new link; order and accounting hold across
	// the change. Links to seeds kept by this node, to nodes the user
	// Connected to, and to nodes discovery does not list stay open.
	// The package doc (Links) has the whole rule. Default 60s (longer than proxypool's
	// IdleTimeout, so an idle pool goes first); negative: never.
	LinkIdleTimeout time.Duration
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
		Listen:             "127.0.0.1:0",
		MaxFrameSize:       64 << 20,
		HeartbeatInterval:  time.Second,
		HeartbeatMisses:    3,
		HandshakeTimeout:   5 * time.Second,
		DialTimeout:        5 * time.Second,
		LinkBufferBytes:    4 << 20,
		SendPolicy:         actor.Block,
		PoolSize:           runtime.GOMAXPROCS(0),
		MaxHandshakes:      256,
		MaxHandshakesPerIP: 32,

		MaxInflightPerPeer:      4096,
		MaxInflightBytesPerPeer: 64 << 20,
		MaxMessageSize:          4 << 20,
		ReadBudgetBytes:         4 * (64 << 20),
		MaxAnnounceBytes:        64 << 10,
		MaxWatchesPerPeer:       65536,
		ForgetNodesAfter:        5 * time.Minute,
		MaxNodes:                16384,
		LinkIdleTimeout:         time.Minute,
	}
}

func (c Config) withDefaults(sys *actor.System) (Config, error) {
	d := DefaultConfig()
	if c.Listen == "" {
		c.Listen = d.Listen
	}
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = d.MaxFrameSize
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = d.HeartbeatInterval
	}
	if c.HeartbeatMisses == 0 {
		c.HeartbeatMisses = d.HeartbeatMisses
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
	if c.MaxHandshakes == 0 {
		c.MaxHandshakes = d.MaxHandshakes
	}
	if c.MaxHandshakesPerIP == 0 {
		c.MaxHandshakesPerIP = d.MaxHandshakesPerIP
	}
	if c.LinkIdleTimeout == 0 {
		c.LinkIdleTimeout = d.LinkIdleTimeout
	}
	if c.Logger == nil {
		c.Logger = sys.Logger()
	}
	c.limitDefaults(d)
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
	case c.MaxFrameSize < 1<<10 || c.MaxFrameSize > 1<<30:
		return fmt.Errorf("remote: config: MaxFrameSize is %d, want 1 KiB to 1 GiB", c.MaxFrameSize)
	case c.HeartbeatInterval < 0:
		return fmt.Errorf("remote: config: HeartbeatInterval is %v, want a positive duration", c.HeartbeatInterval)
	case c.HeartbeatMisses < 1:
		return fmt.Errorf("remote: config: HeartbeatMisses is %d, want 1 or more", c.HeartbeatMisses)
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
	case c.MaxHandshakes < 0 || c.MaxHandshakesPerIP < 0:
		return fmt.Errorf("remote: config: MaxHandshakes %d / MaxHandshakesPerIP %d: want 0 (default) or more", c.MaxHandshakes, c.MaxHandshakesPerIP)
	case c.SendPolicy != actor.Block && c.SendPolicy != actor.FailFast:
		return fmt.Errorf("remote: config: SendPolicy is %d, want Block or FailFast", int(c.SendPolicy))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("remote: config: Listen %q: %w", c.Listen, err)
	}
	return c.validateLimits()
}

// poolWorkers is the advertised receiver pool size (PeerInfo.PoolWorkers,
// discovery.Member.PoolWorkers): discovery.NoReceiverPool when disabled.
func (c Config) poolWorkers() int {
	if c.PoolSize == PoolDisabled {
		return discovery.NoReceiverPool
	}
	return c.PoolSize
}
