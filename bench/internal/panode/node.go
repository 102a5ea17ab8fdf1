package panode

import (
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/mailroom-go/mailroom/bench/benchpb"
)

// base is a protoactor system with its remote started on loopback.
type base struct {
	sys   *actor.ActorSystem
	rem   *remote.Remote
	dead  atomic.Int64 // dead letters seen
	dead0 atomic.Int64 // at the last arm
}

func start() *base {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	// Generated types register themselves with the global registry that
	// protoactor's serializer resolves names in; touch them so the
	// package is linked.
	_ = benchpb.Types()
	rem := remote.NewRemote(sys, remote.Configure("127.0.0.1", 0))
	rem.Start()
	b := &base{sys: sys, rem: rem}
	sys.EventStream.Subscribe(func(ev any) {
		if _, ok := ev.(*actor.DeadLetterEvent); ok {
			b.dead.Add(1)
		}
	})
	return b
}

func (b *base) arm()            { b.dead0.Store(b.dead.Load()) }
func (b *base) failures() int64 { return b.dead.Load() - b.dead0.Load() }

// stop ends the node after the point. Not the graceful remote shutdown:
// in this protoactor-go version it races (go test -race) between
// endpointManager.stop and an endpoint writer's connection-lost event.
func (b *base) stop() {
	b.rem.Shutdown(false)
	b.sys.Shutdown()
}
