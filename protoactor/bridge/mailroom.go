package bridge

// This file and mailroom_interop.go are the bridge's only uses of
// mailroom's API, all of it the user-level API: actor.Start, remote.Start,
// proxypool.Start, System Send/Request/Call/Cast through Sender handles,
// SpawnNamed, Context.Watch, SubscribeDeadLetters, RegisterTypes, and the
// error taxonomy. The rest of the bridge speaks protoactor and calls
// mailroom through the mailroom type below.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/asynkron/protoactor-go/actor"
	mr "github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/protoactor/internal/wirepb"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
)

// protocolVersion is the bridge protocol this code speaks (Hello.version).
const protocolVersion = 1

// endpointNames are the registered mailroom names of the endpoints.
var endpointNames = func() (n [endpointCount]string) {
	for k := range n {
		n[k] = "protoactor.v1." + strconv.Itoa(k)
	}
	return n
}()

// endpointName is the registered mailroom name of endpoint k.
func endpointName(k int) string { return endpointNames[k] }

// Start attaches a bridge to a protoactor ActorSystem and the mailroom
// System of the same process (remote.Start must have been called on it
// for other nodes to be reachable; proxypool.Start makes the bridge's
// traffic pooled). From then on the actor system's address is
// Address(sys.Name(), sys.Incarnation()), and every PID with a mailroom
// address resolves through the bridge. Start registers the bridge's wire
// types with sys, and spawns its endpoint actors (named "protoactor.v1.0"
// to "protoactor.v1.7") and a monitor actor on sys.
func Start(pas *actor.ActorSystem, sys *mr.System, cfg Config) (*Bridge, error) {
	if pas == nil || sys == nil {
		return nil, fmt.Errorf("bridge: start: want a protoactor ActorSystem and a mailroom System")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = sys.Logger()
	}
	types := cfg.Types
	if types == nil {
		types = sys.Config().Types
	}
	if err := sys.RegisterTypes(&wirepb.Envelope{}, &wirepb.Hello{}); err != nil {
		return nil, fmt.Errorf("bridge: start: %w", err)
	}
	b := newBridge(pas, sys.Name(), sys.Incarnation(), cfg, types)
	m := &mailroom{sys: sys, lanes: make([]*mr.Sender, cfg.Lanes)}
	b.mr = m
	for i := range m.lanes {
		m.lanes[i] = sys.NewSender()
	}
	if m.monitor, err = sys.Spawn(mr.PropsFromFunc(m.monitorReceive(b))); err != nil {
		return nil, fmt.Errorf("bridge: start: monitor: %w", err)
	}
	for k := range m.endpoints {
		props := mr.PropsFromFunc(m.endpointReceive(b)).WithMailbox(cfg.EndpointMailbox, mr.Block)
		if m.endpoints[k], err = sys.SpawnNamed(props, endpointName(k)); err != nil {
			_ = m.stop(context.Background())
			return nil, fmt.Errorf("bridge: start: endpoint: %w (is a bridge already attached to node %s?)", err, sys.Name())
		}
	}
	m.unsubscribe = sys.SubscribeDeadLetters(func(dl mr.DeadLetter) {
		if env, ok := dl.Message.(*wirepb.Envelope); ok && dl.Sender.Node == sys.Name() {
			b.onDeadLetter(dl.To.Node, env, dl.Reason)
		}
	})
	b.install()
	return b, nil
}

// NodeConfig configures StartNode: one process's mailroom node, its
// protoactor actor system and the bridge between them.
type NodeConfig struct {
	// Name is the mailroom node name, unique in the cluster. Required.
	Name string
	// Remote configures mailroom's remote layer: Remote.Cookie is
	// required (16 bytes or more: remote.NewCookie makes one); Listen,
	// Seeds, Discovery, TLS and the rest as documented there.
	Remote remote.Config
	// Pool configures the proxy pool; Native runs without one (mailroom's
	// native path only).
	Pool   proxypool.Config
	Native bool
	// Types are registered with the mailroom System: the messages this
	// node accepts from other nodes (the bridge's Config.Types defaults to
	// that registry).
	Types []proto.Message
	// Logger for mailroom, the bridge and protoactor. Default: mailroom's
	// (text to stderr at Info).
	Logger *slog.Logger
	// Bridge configures the bridge.
	Bridge Config
}

// Node is a process's mailroom node with a protoactor actor system using
// it as its remote.
type Node struct {
	Mailroom *mr.System
	Remote   *remote.Node
	Pools    *proxypool.Manager // nil when Native
	Actors   *actor.ActorSystem
	Bridge   *Bridge
}

// StartNode starts a mailroom System with its remote (and a proxy pool
// unless Native), a protoactor ActorSystem, and the bridge. ctx bounds
// the start (remote.Start waits for discovery). Stop it with Node.Stop.
func StartNode(ctx context.Context, cfg NodeConfig) (*Node, error) {
	if cfg.Name == "" {
		return nil, fmt.Errorf("bridge: start node: Name is empty")
	}
	sys, err := mr.Start(mr.Config{Name: cfg.Name, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	n := &Node{Mailroom: sys}
	fail := func(err error) (*Node, error) {
		_ = sys.Stop(context.Background())
		return nil, err
	}
	if err := sys.RegisterTypes(cfg.Types...); err != nil {
		return fail(err)
	}
	if n.Remote, err = remote.Start(ctx, sys, cfg.Remote); err != nil {
		return fail(err)
	}
	if !cfg.Native {
		if n.Pools, err = proxypool.Start(n.Remote, cfg.Pool); err != nil {
			return fail(err)
		}
	}
	log := sys.Logger()
	n.Actors = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log.With("lib", "protoactor") }))
	if cfg.Bridge.Logger == nil {
		cfg.Bridge.Logger = log
	}
	if n.Bridge, err = Start(n.Actors, sys, cfg.Bridge); err != nil {
		n.Actors.Shutdown()
		return fail(err)
	}
	return n, nil
}

// Addr is the address other nodes reach this one at (for their Seeds).
func (n *Node) Addr() string { return n.Remote.Addr() }

// Stop stops the bridge, then the mailroom System (which drains and
// closes its links), then the protoactor ActorSystem.
func (n *Node) Stop(ctx context.Context) error {
	err := n.Bridge.Stop(ctx)
	err = errors.Join(err, n.Mailroom.Stop(ctx))
	n.Actors.Shutdown()
	return err
}

// mailroom is the bridge's handle on its mailroom System.
type mailroom struct {
	sys         *mr.System
	lanes       []*mr.Sender // outgoing messages, by target hash
	endpoints   [endpointCount]mr.PID
	monitor     mr.PID
	unsubscribe func()
}

// send sends env to endpoint ep of node on lane. Mailroom counts what it
// cannot deliver as a dead letter, which the bridge hears (onDeadLetter).
func (m *mailroom) send(lane int, node string, ep int, env *wirepb.Envelope) {
	m.lanes[lane].SendNamed(node, endpointName(ep), env)
}

// hello opens a session with node: a mailroom request, pinned to the
// incarnation that takes it, to its endpoint 0. It returns that
// incarnation and its endpoint's id, or why the session cannot open.
func (m *mailroom) hello(ctx context.Context, node string) (peerKey, uint64, error) {
	h := &wirepb.Hello{Version: protocolVersion, Node: m.sys.Name(), Incarnation: m.sys.Incarnation(), Endpoint: m.endpoints[0].ID}
	res, err := m.lanes[0].RequestNamed(ctx, node, endpointName(0), h)
	if err != nil {
		return peerKey{}, 0, helloReason(ctx, node, err)
	}
	ack, ok := res.(*wirepb.Hello)
	if !ok || ack.Node != node || ack.Incarnation == 0 {
		return peerKey{}, 0, fmt.Errorf("%w: node %s answered the bridge's hello with %T", mr.ErrUnreachable, node, res)
	}
	return peerKey{node, ack.Incarnation}, ack.Endpoint, nil
}

// helloReason turns a failed hello into the reason every message that
// waited for it fails with. None of them left this node.
func helloReason(ctx context.Context, node string, err error) error {
	var re *mr.RemoteError
	switch {
	case ctx.Err() != nil:
		return errStoppedReason()
	case errors.As(err, &re):
		return fmt.Errorf("%w: node %s refused the bridge's session: %s", mr.ErrUnreachable, node, re.Message)
	case errors.Is(err, mr.ErrNoProcess), errors.Is(err, mr.ErrBadMessage):
		// No endpoint by that name, or a node that does not even know the
		// Hello type.
		return fmt.Errorf("%w: node %s runs no protoactor bridge (no actor %q)", mr.ErrNoProcess, node, endpointName(0))
	case errors.Is(err, mr.ErrNodeDown):
		return fmt.Errorf("%w: node %s went down while the bridge opened its session", mr.ErrNotSent, node)
	}
	var e *mr.Error
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}

// watchPeer has the monitor watch the peer's endpoint 0: mailroom then
// reports the incarnation's loss (peerTable.gone).
func (m *mailroom) watchPeer(key peerKey, endpoint uint64) {
	m.sys.Send(m.monitor, watchPeerMsg{mr.PID{Node: key.node, Incarnation: key.inc, ID: endpoint}})
}

type watchPeerMsg struct{ pid mr.PID }

// monitorReceive is the monitor actor: it watches peers' endpoints (and
// mailroom actors protoactor actors watch, mailroom_interop.go).
func (m *mailroom) monitorReceive(b *Bridge) mr.ReceiveFunc {
	interop := make(map[mr.PID][]*actor.PID) // watched mailroom actor -> protoactor watchers
	return func(c *mr.Context) {
		switch msg := c.Message().(type) {
		case watchPeerMsg:
			c.Watch(msg.pid)
		case interopWatchMsg:
			m.interopWatch(c, interop, msg)
		case mr.Terminated:
			if ws, ok := interop[msg.PID]; ok {
				delete(interop, msg.PID)
				b.interopTerminated(msg.PID, ws, msg.Reason)
				return
			}
			b.peers.gone(b, peerKey{msg.PID.Node, msg.PID.Incarnation}, nodeDownReason())
		}
	}
}

// endpointReceive is an endpoint actor: envelopes from other bridges, and
// hellos (endpoint 0).
func (m *mailroom) endpointReceive(b *Bridge) mr.ReceiveFunc {
	targets := newTargetCache(b.addr) // this endpoint's own: one goroutine at a time
	return func(c *mr.Context) {
		switch msg := c.Message().(type) {
		case *wirepb.Envelope:
			from := c.Sender()
			b.deliver(peerKey{from.Node, from.Incarnation}, msg, targets)
		case *wirepb.Hello:
			from := c.Sender()
			ack, err := b.onHello(from.Node, from.Incarnation, msg, m.endpoints[0].ID)
			if err != nil {
				c.RespondError(err)
				return
			}
			c.Respond(ack)
		}
	}
}

// stop stops the monitor and the endpoints; peers watching this node's
// endpoint 0 see it end and drop their sessions.
func (m *mailroom) stop(ctx context.Context) error {
	if m.unsubscribe != nil {
		m.unsubscribe()
	}
	var errs []error
	for _, pid := range append([]mr.PID{m.monitor}, m.endpoints[:]...) {
		if pid.IsZero() {
			continue
		}
		if err := m.sys.StopActorWait(ctx, pid); err != nil && !errors.Is(err, mr.ErrNoProcess) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("bridge: stop: %w", errors.Join(errs...))
	}
	return nil
}

// Error codes of failure envelopes: mailroom's own wire codes.
var (
	noProcessCode  = mr.ErrorCode(mr.ErrNoProcess)
	badMessageCode = mr.ErrorCode(mr.ErrBadMessage)
)

// newError is the error a requester gets: mailroom's *actor.Error, so
// errors.Is(err, actor.ErrNodeDown) and actor.Outcome(err) work on it.
func newError(op, node string, inc uint64, target string, reason error) error {
	return mr.NewError(op, node, inc, target, reason)
}

// mayHaveExecuted marks err as may-have-executed.
func mayHaveExecuted(err error) error {
	var e *mr.Error
	if errors.As(err, &e) {
		e.Outcome = mr.MayHaveExecuted
	}
	return err
}

func errStoppedReason() error {
	return fmt.Errorf("%w: the protoactor bridge stopped", mr.ErrStopped)
}

func nodeDownReason() error {
	return fmt.Errorf("%w: the node incarnation that took the request is gone", mr.ErrNodeDown)
}

func nodeGoneBeforeSendReason(key peerKey) error {
	return fmt.Errorf("%w: node %s (incarnation %016x) went down before the message left", mr.ErrNotSent, key.node, key.inc)
}

func staleReason(now peerKey, named uint64) error {
	return fmt.Errorf("%w: node %s is incarnation %016x now; the PID names %016x, an earlier one", mr.ErrNoProcess, now.node, now.inc, named)
}

func overloadedReason(node string, limit int) error {
	return fmt.Errorf("%w: %d messages already wait for the session with node %s (MaxQueued)", mr.ErrOverloaded, limit, node)
}

func badMessageReason(err error) error { return fmt.Errorf("%w: %v", mr.ErrBadMessage, err) }

// wireError rebuilds a peer's refusal (a failure envelope) as the
// requester's error: not executed, naming the refusing node.
func wireError(from peerKey, env *wirepb.Envelope) error {
	sentinel := mr.SentinelForCode(env.FailureCode)
	if sentinel == nil {
		sentinel = mr.ErrBadMessage
	}
	target := describe(&actor.PID{Id: env.SenderId})
	return &mr.Error{Op: "request", Node: from.node, Incarnation: from.inc, Target: target,
		Err: &wireReason{sentinel: sentinel, text: env.FailureText}, Outcome: mr.NotExecuted}
}

// wireReason is a reason from the other side: the sentinel for errors.Is,
// the other side's text for people.
type wireReason struct {
	sentinel error
	text     string
}

func (w *wireReason) Error() string { return fmt.Sprintf("%v: %s", w.sentinel, w.text) }
func (w *wireReason) Unwrap() error { return w.sentinel }

// onDeadLetter hears mailroom drop an envelope this bridge sent (the node
// unreachable, a full proxy, a link gone): a waiting requester fails at
// once with mailroom's reason.
func (b *Bridge) onDeadLetter(node string, env *wirepb.Envelope, reason error) {
	if env.Kind != wirepb.Kind_KIND_USER || env.SenderId == "" || env.SenderAddress != b.addr {
		return
	}
	requester := actor.NewPID(b.addr, env.SenderId)
	if isFutureID(env.SenderId) && !b.pending.take(env.SenderId) {
		return // already answered or failed
	}
	b.deliverFailure(requester, retarget(reason, "request", node, env.TargetIncarnation, describe(&actor.PID{Id: env.Target})))
}

// retarget rewrites a mailroom error about the bridge's own traffic (an
// envelope to an endpoint actor) as one about the protoactor target,
// keeping its reason and outcome.
func retarget(err error, op, node string, inc uint64, target string) error {
	var e *mr.Error
	if !errors.As(err, &e) {
		return newError(op, node, inc, target, err)
	}
	if e.Incarnation != 0 {
		inc = e.Incarnation
	}
	return &mr.Error{Op: op, Node: node, Incarnation: inc, Target: target, Err: e.Err, Outcome: e.Outcome}
}

func noSuchProcessReason() error {
	return fmt.Errorf("%w: no such protoactor process", mr.ErrNoProcess)
}

// executedBadReply is a reply that ran but cannot be returned.
func executedBadReply(node string, inc uint64, target string, err error) error {
	return &mr.Error{Op: "request", Node: node, Incarnation: inc, Target: target, Err: badMessageReason(err), Outcome: mr.Executed}
}
