package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	mr "github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
)

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
// unless Native), a protoactor ActorSystem, and the bridge. Stop it with
// Node.Stop.
func StartNode(cfg NodeConfig) (*Node, error) {
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
	if n.Remote, err = remote.Start(sys, cfg.Remote); err != nil {
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
