package bridgenode

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/mrnode"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/panode"
	"github.com/mailroom-go/mailroom/protoactor/bridge"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
)

// node is a bridged node: a panode.Remote over mailroom.
type node struct {
	n    *bridge.Node
	peer string // the other node's name
	dead *panode.DeadLetters
	// At the last Arm: mailroom's dead letters, and the messages the
	// bridge refused here (payloads it could not decode, envelopes from
	// a peer without a session).
	mrDead0, refused0 atomic.Uint64
}

var _ panode.Remote = (*node)(nil)

// start starts node name (the other is peer) with seeds: the bench's
// types, its cookie, every default of mailroom, its pool and the bridge.
func start(name, peer string, seeds []string) (*node, error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n, err := bridge.StartNode(context.Background(), bridge.NodeConfig{
		Name:   name,
		Remote: remote.Config{Cookie: nodeapi.Cookie, Seeds: seeds},
		// Eager, as mrnode's pooled path: measured with its pools up.
		Pool:   proxypool.Config{Eager: true},
		Types:  benchpb.Types(),
		Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("bridgenode: start %s: %w", name, err)
	}
	return &node{n: n, peer: peer, dead: panode.CountDeadLetters(n.Actors)}, nil
}

func (b *node) Actors() *actor.ActorSystem { return b.n.Actors }
func (b *node) Addr() string               { return b.n.Addr() }

// Target: the receiver's actor by name on whichever incarnation of the
// receiver node is current, as a protoactor user addresses a named actor
// over the bridge.
func (b *node) Target(_, name string) *actor.PID {
	return actor.NewPID(bridge.NodeAddress(b.peer), name)
}

// Result: a failure the bridge detects (node loss, an unregistered type,
// no such process) is the future's result; bridge.Result makes it the
// error, where a protoactor timeout is too.
func (b *node) Result(f *actor.Future) (any, error) { return bridge.Result(f) }

// Connected: the bridge has a session with the peer (on the sender,
// Connect opened it before Ready; on the receiver the sender's hello
// did) and mailroom's pool toward the peer is connected.
func (b *node) Connected() bool {
	return b.n.Bridge.Stats().Peers > 0 && mrnode.PathReady(b.n.Remote, b.n.Pools, b.peer)
}

func (b *node) Arm() {
	b.dead.Arm()
	b.mrDead0.Store(b.n.Mailroom.DeadLetters())
	b.refused0.Store(b.refused())
}

// refused counts what the bridge refused here since it started.
func (b *node) refused() uint64 {
	st := b.n.Bridge.Stats()
	return st.BadMessages + st.UnknownPeer
}

// Failures counts, since Arm, every operation lost on this node: a
// protoactor DeadLetterEvent (a send to no such actor, and every send the
// bridge drops: Bridge.Stats().Dropped is published as one, so it is
// not added again), a mailroom dead letter (an envelope mailroom could
// not deliver), and a message the bridge refused. A failed request is
// the writer's error (Result) and is not added again from
// Bridge.Stats().FailedRequests; one whose envelope mailroom dropped is
// also a mailroom dead letter, so a loss counts once or twice, never
// zero times.
func (b *node) Failures() int64 {
	return b.dead.Since() + int64(b.n.Mailroom.DeadLetters()-b.mrDead0.Load()) + int64(b.refused()-b.refused0.Load())
}

// Stats: mailroom's remote and pool figures, as on the pooled path.
func (b *node) Stats(st *nodeapi.Stats) {
	mrnode.RuntimeStats(st, b.n.Remote, b.n.Pools, b.peer)
	st.DeadLetters = b.n.Mailroom.DeadLetters() - b.mrDead0.Load()
}

// Stop stops the bridge, then the mailroom System, then the protoactor
// ActorSystem (bridge.Node.Stop): requests still waiting fail at once.
func (b *node) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.n.Stop(ctx); err != nil {
		return fmt.Errorf("bridgenode: stop %s: %w", b.n.Mailroom.Name(), err)
	}
	return nil
}
