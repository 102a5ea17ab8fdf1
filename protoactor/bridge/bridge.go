package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Bridge makes a protoactor-go ActorSystem use a mailroom node as its
// remote. Start one per node with Start (or StartNode); Stop it before
// the mailroom System.
type Bridge struct {
	pas   *actor.ActorSystem
	cfg   Config
	self  nodeAddr // this node and incarnation
	addr  string   // Address(self): the actor system's address
	log   *slog.Logger
	mr    *mailroom
	types *typeResolver

	sessions sessionTable
	peers    peerTable
	pending  pendingTable
	procs    procCache
	stats    counters
	warn     warnWindow

	ctx    context.Context // ends at Stop: owned goroutines return
	cancel context.CancelFunc
	// workMu orders Add against Stop's Wait: no goroutine starts once
	// stopping is set.
	workMu   sync.Mutex
	work     sync.WaitGroup
	stopping atomic.Bool
	stopOnce sync.Once
	stopErr  error
}

// newBridge builds the bridge core for node/inc; Start wires mailroom in.
func newBridge(pas *actor.ActorSystem, node string, inc uint64, cfg Config, types protoregistry.MessageTypeResolver) *Bridge {
	b := &Bridge{
		pas:   pas,
		cfg:   cfg,
		self:  nodeAddr{node: node, inc: inc},
		addr:  Address(node, inc),
		log:   cfg.Logger.With("component", "protoactor-bridge"),
		types: newTypeResolver(types),
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.sessions.init()
	b.peers.init()
	b.pending.init()
	b.procs.init()
	return b
}

// install makes the actor system's PIDs mailroom addresses and routes
// every mailroom address through the bridge.
func (b *Bridge) install() {
	b.pas.ProcessRegistry.Address = b.addr
	b.pas.ProcessRegistry.RegisterAddressResolver(b.resolve)
}

// ActorSystem is the protoactor system the bridge serves.
func (b *Bridge) ActorSystem() *actor.ActorSystem { return b.pas }

// Address is this node's protoactor address, Address(node, incarnation):
// every PID the actor system spawns carries it.
func (b *Bridge) Address() string { return b.addr }

// Node is the mailroom node name the bridge runs on.
func (b *Bridge) Node() string { return b.self.node }

// goOwned runs f on a goroutine Stop waits for; false once stopping.
func (b *Bridge) goOwned(f func()) bool {
	b.workMu.Lock()
	defer b.workMu.Unlock()
	if b.stopping.Load() {
		return false
	}
	b.work.Add(1)
	go func() {
		defer b.work.Done()
		f()
	}()
	return true
}

// Stop detaches the bridge. In order: new messages to other nodes fail
// (requests with mailroom's ErrStopped, sends as dead letters); sessions
// being opened and requests to mailroom targets are cancelled and waited
// for; every request still waiting on another node fails (ErrStopped, may
// have executed) and every watch of a remote actor ends with Terminated
// (AddressTerminated); the endpoint actors stop, which tells the peers
// this node's bridge is gone. It does not stop the mailroom System nor the
// protoactor ActorSystem: stop those after. Idempotent; blocks until done
// or ctx ends.
func (b *Bridge) Stop(ctx context.Context) error {
	b.stopOnce.Do(func() {
		b.workMu.Lock()
		b.stopping.Store(true)
		b.workMu.Unlock()
		b.cancel()
		done := make(chan struct{})
		go func() {
			b.work.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			b.stopErr = fmt.Errorf("bridge: stop: %w while waiting for %s's sessions and requests", ctx.Err(), b.self.node)
			return
		}
		b.sessions.failAll(b, errStoppedReason())
		b.peers.goneAll(b, errStoppedReason())
		b.stopErr = b.mr.stop(ctx)
	})
	return b.stopErr
}

// deliverFailure tells a local requester that its request failed: a
// future completes with err as its result, an actor receives err as a
// message. A future that is no longer waiting is left alone.
func (b *Bridge) deliverFailure(requester *actor.PID, err error) {
	b.stats.failedRequests.Add(1)
	if isFutureID(requester.Id) {
		b.completeFuture(requester.Id, err)
		return
	}
	b.pas.Root.Send(requester, err)
}

// completeFuture hands msg to the local future id if it still waits;
// false if it does not (answered, failed or timed out already).
func (b *Bridge) completeFuture(id string, msg any) bool {
	proc, ok := b.pas.ProcessRegistry.GetLocal(id)
	if !ok {
		return false
	}
	proc.SendUserMessage(actor.NewPID(b.addr, id), msg)
	return true
}

// dropped reports a plain send that will never be delivered: counted,
// logged at debug level, and published as protoactor's DeadLetterEvent so
// a protoactor user sees it where they look for dead letters.
func (b *Bridge) dropped(target *actor.PID, msg any, err error) {
	b.stats.dropped.Add(1)
	b.log.Debug("message dropped", "target", target.String(), "err", err)
	b.pas.EventStream.Publish(&actor.DeadLetterEvent{PID: target, Message: msg})
}

// isFutureID reports whether id names a protoactor future ("future$…").
func isFutureID(id string) bool { return len(id) > 7 && id[:7] == "future$" }
