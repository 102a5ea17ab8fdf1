package panode

import (
	"log/slog"
	"os"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
)

// grpcNode is a protoactor system with protoactor-go's own remote started
// on loopback.
type grpcNode struct {
	sys  *actor.ActorSystem
	rem  *remote.Remote
	dead *DeadLetters
}

var _ Remote = (*grpcNode)(nil)

func start() *grpcNode {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	// Generated types register themselves with the global registry that
	// protoactor's serializer resolves names in; touch them so the
	// package is linked.
	_ = benchpb.Types()
	rem := remote.NewRemote(sys, remote.Configure("127.0.0.1", 0))
	rem.Start()
	return &grpcNode{sys: sys, rem: rem, dead: CountDeadLetters(sys)}
}

func (g *grpcNode) Actors() *actor.ActorSystem { return g.sys }
func (g *grpcNode) Addr() string               { return g.sys.Address() }

// Target: protoactor-go addresses a remote actor by host:port and name.
func (g *grpcNode) Target(peer, name string) *actor.PID { return actor.NewPID(peer, name) }

// Result: a failed request is the future's error (a timeout, a dead
// letter).
func (g *grpcNode) Result(f *actor.Future) (any, error) { return f.Result() }

// Connected: protoactor-go connects on the first message.
func (g *grpcNode) Connected() bool { return true }

func (g *grpcNode) Arm()                 { g.dead.Arm() }
func (g *grpcNode) Failures() int64      { return g.dead.Since() }
func (g *grpcNode) Stats(*nodeapi.Stats) {} // protoactor-go reports no bytes or batches

// Stop ends the node after the point. Not the graceful remote shutdown:
// in this protoactor-go version it races (go test -race) between
// endpointManager.stop and an endpoint writer's connection-lost event.
func (g *grpcNode) Stop() error {
	g.rem.Shutdown(false)
	g.sys.Shutdown()
	return nil
}
