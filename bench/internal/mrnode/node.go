package mrnode

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/spec"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
)

// base is what both roles start: a system, its remote layer and, pooled,
// its proxy pools.
type base struct {
	sys   *actor.System
	node  *remote.Node
	pools *proxypool.Manager // nil on the native path
	peer  string             // the other node's name
	dead0 atomic.Uint64      // dead letters when the phase was armed
	cast0 atomic.Uint64      // cast failures when the phase was armed
}

func start(name, peer string, s spec.Spec, seeds []string) (*base, error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sys, err := actor.Start(actor.Config{Name: name, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := sys.RegisterTypes(benchpb.Types()...); err != nil {
		return nil, err
	}
	node, err := remote.Start(context.Background(), sys, remote.Config{Cookie: nodeapi.Cookie, Seeds: seeds})
	if err != nil {
		return nil, err
	}
	b := &base{sys: sys, node: node, peer: peer}
	if s.Path == spec.PathPooled {
		// Eager: the pooled path is measured with its pools up, as the
		// native one with its link up (PathReady).
		if b.pools, err = proxypool.Start(node, proxypool.Config{Eager: true}); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// connected reports whether the path toward the peer is ready.
func (b *base) connected() bool { return PathReady(b.node, b.pools, b.peer) }

// PathReady reports whether node's path toward peer is ready: a link to
// it, and with pools (nil on the native path), the pool toward it
// connected.
func PathReady(node *remote.Node, pools *proxypool.Manager, peer string) bool {
	if _, ok := node.Peer(peer); !ok {
		return false
	}
	if pools == nil {
		return true
	}
	return pools.ConnectionInfo(peer).Status == proxypool.Connected
}

// arm starts counting a phase's failures.
func (b *base) arm() {
	b.dead0.Store(b.sys.DeadLetters())
	b.cast0.Store(b.sys.CastFailures())
}

// failures counts the phase's dead letters and failed casts.
func (b *base) failures() int64 {
	return int64(b.sys.DeadLetters()-b.dead0.Load()) + int64(b.sys.CastFailures()-b.cast0.Load())
}

// stats fills the runtime's own figures.
func (b *base) stats(st *nodeapi.Stats) {
	RuntimeStats(st, b.node, b.pools, b.peer)
	st.DeadLetters = b.sys.DeadLetters() - b.dead0.Load()
}

// RuntimeStats fills st with what node's remote and, with pools (nil on
// the native path), the pool toward peer counted so far: bytes, batch
// frames, messages in them and their sizes (the controller takes the
// measured phase's deltas).
func RuntimeStats(st *nodeapi.Stats, node *remote.Node, pools *proxypool.Manager, peer string) {
	rs := node.Stats()
	st.BytesOut, st.BytesIn = rs.BytesOut, rs.BytesIn
	if pools != nil {
		ps := pools.Stats(peer)
		st.Batches, st.BatchedMsgs = ps.Batches, ps.Messages
		st.BatchHist = append([]uint64(nil), ps.Hist[:]...)
	}
}

func (b *base) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20e9)
	defer cancel()
	if err := b.sys.Stop(ctx); err != nil {
		return fmt.Errorf("mrnode: stop %s: %w", b.sys.Name(), err)
	}
	return nil
}
