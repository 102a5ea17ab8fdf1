// Package remote connects mailroom nodes: TCP links (optionally TLS)
// authenticated both ways over a shared cookie, the wire protocol of
// internal/wire/SPEC.md (its codec lives in package internal/wire),
// heartbeats, and the native path that carries Send, Request,
// Cast, Call and Watch to actors and functions on other nodes.
//
// # Usage
//
//	sys, _ := actor.Start(actor.Config{Name: "orders-1"})
//	node, err := remote.Start(ctx, sys, remote.Config{
//		Listen: "10.0.0.5:7400",
//		Cookie: os.Getenv("MAILROOM_COOKIE"), // remote.NewCookie() made it
//		Seeds:  []string{"billing-1=10.0.0.6:7400"},
//	})
//	res, err := sys.Call(ctx, "billing-1", "charge", &pb.Charge{...})
//	err = sys.Stop(ctx) // drains, says goodbye, closes links
//
// Start waits for discovery to register the node (for Consul, an agent's
// answer); ctx bounds that wait. After Start every PID, registered name and
// function on another node is reachable through the System's ordinary
// methods (any actor.Caller). Node reports what the layer sees: Peers,
// Pending, Running and Stats (SendsNative and SendsPooled count sends and
// casts, CallsNative and CallsPooled calls and requests; Received counts
// what peers sent, Delivered what of it was handed on).
//
// # Liveness instead of timeouts
//
// No call or request has a default timeout. Each is pinned to the peer
// incarnation that took it and to the path it was sent on; it fails the
// moment that link closes or misses HeartbeatMisses heartbeats, discovery
// reports the incarnation down, or the peer shows up as a new incarnation
// (its hello; or discovery listing another incarnation once ours has no
// link left: a listing alone cannot end a linked incarnation, since
// discovery lists a crashed one beside its successor until its TTL).
// Its reply may come back on another of the peer's links (through the
// peer's own pool): a link of the peer's that ends before it was read to
// the end (closed as silent, say) fails every call that left, and one the
// peer dialed fails those that leave until the peer has learned (its
// fence naming the link, or a heartbeat window and an interval later).
// The error says whether the work may have run: actor.ErrNotSent (it
// never left this process) or actor.ErrNodeDown (it did). A ctx deadline
// travels with the call as an absolute time (the nodes' clocks must be
// synchronised); cancelling ctx sends a cancel to the incarnation that
// took the call.
//
// # Links follow traffic
//
// A native link is dialed on the first message to a node (or by Connect,
// or kept to a seed). One the node dialed for traffic closes once it has
// carried nothing but heartbeats for Config.Liveness.LinkIdleTimeout (60 s) while
// nothing was pinned to it: no call waiting, no watch either way, no pool
// toward the peer. That is no failure: the peer incarnation stays known,
// and the next message dials a new link, after everything the old one
// carried (per-sender order holds; Stats.LinksIdleClosed counts them).
//
// # Trust
//
// Links are authenticated both ways over the cookie (internal/wire/SPEC.md): the dialer
// proves first, each proof covers the whole handshake, and nothing a peer
// says changes this node's state before it has proved the cookie. A node
// stops itself on a peer's word only when that word is authenticated
// (its incarnation was declared dead). Handshakes in progress are capped
// (MaxHandshakes, MaxHandshakesPerIP) and bounded by one
// HandshakeTimeout; a connection silent past a much shorter first-byte
// deadline gives its slot back, and at a cap the slowest handshake not yet
// proved is shed for the newcomer. A node name must follow the rule of
// actor.Config.Name, on both sides. Every handshake failure wraps
// ErrHandshake.
//
// Without TLS, a node name is only a claim: any holder of the cookie can
// claim any name, and an attacker on the network path can read and
// change frames after the handshake. With TLS (TLSServer and TLSClient,
// certificates both ways), a name must be in the peer's certificate, or
// pass VerifyPeer. docs/SECURITY.md has the threat model.
//
// # The caller's duties
//
//   - Every node of a cluster needs the same Cookie (at least 16 bytes
//     of secret: NewCookie makes one) and a unique name.
//   - Messages and arguments that cross nodes are proto.Message values
//     whose types both nodes registered (System.RegisterTypes).
//   - Send and Cast wait on the first contact with a node while its link
//     is dialed (at most DialTimeout), and while the link's buffer is full
//     (SendPolicy Block); with FailFast they fail with ErrOverloaded.
//   - Per-sender order holds from one sender to one target, and nothing
//     more.
//
// # The fast codec
//
// Payloads are protobuf. When a message type also has the methods
// vtprotobuf generates (SizeVT, MarshalToSizedBufferVT, UnmarshalVT), the
// remote layer uses them on both sides: the sender encodes straight into
// the frame, the receiver decodes into a fresh message of the registered
// type, without protobuf's reflection (about twice as fast, see
// BenchmarkPayloadCodec). The bytes on the wire are the same either way,
// so types with and without the methods mix freely, and each side decides
// for itself. Generate them beside the usual code:
//
//	apt-get install -y protobuf-compiler   # protoc
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@v0.6.0
//	protoc --go_out=. --go-vtproto_out=. \
//		--go-vtproto_opt=features=marshal+unmarshal+size orders.proto
//
// and commit the generated *.pb.go and *_vtproto.pb.go files. Two
// differences from protobuf's decoder: vtprotobuf's does not check that
// proto3 strings are valid UTF-8, and it has no depth limit, so a type
// that can nest itself (directly or through other types) is always
// decoded with protobuf's.
//
// # Tracing
//
// A Call, Request, Send or Cast whose caller's ctx holds a valid
// OpenTelemetry span carries its W3C trace context to the other node
// (Send and Cast through System.SendContext and CastContext, or from an
// actor handling a traced message). With Config.TracerProvider the node
// makes a client or producer span around it, and on receipt a server or
// consumer span whose context the handler gets (a function's ctx, an
// actor's Context.Context); without one it carries and continues the
// context and makes no span. Untraced traffic costs nothing more: no
// byte, no allocation. README, "Tracing".
//
// # Bad input
//
// The decoder never panics (fuzzed). A frame over MaxFrameSize, an unknown
// kind, a malformed body or a failed handshake closes that one link with a
// logged reason and a counter; every other link keeps working.
//
// # Limits
//
// What a peer holding the cookie can make a node run, allocate or keep is
// bounded by the limit fields of Config, each counted in Stats and
// released with the peer's links or incarnation (docs/SECURITY.md): calls
// and casts in flight per peer incarnation (at the bound its links'
// readers stop reading, so TCP pushes back), frame buffers (they grow as
// bytes arrive, within a node-wide read budget), message size and what a
// message decodes into (both checked before decoding; calls and casts are
// admitted at what they decode into), links per peer, announcements,
// watches and node names (per source address too). The strings a peer
// chooses are bounded before a span, a metric label, a log line or an
// error text is made of them, and every log line a peer can cause is
// rate limited. A wait on this node's own resources (a fence, read budget)
// lasts at most the heartbeat window; then links close instead.
package remote
