package panode

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
)

// Remote is the remote a protoactor node's roles run on: protoactor-go's
// own (gRPC, this package) or mailroom's through the bridge (package
// bridgenode). ServeReceiver and ServeSender run the same actors, writers
// and counting on either; only what is asked here differs. Every method
// but Stop may be called from the control goroutine while writers run.
type Remote interface {
	// Actors is the actor system the role spawns its actors on.
	Actors() *actor.ActorSystem
	// Addr is what the sender is given to reach this node (Ready.Addr).
	Addr() string
	// Target is the PID, on the sender, of the receiver's actor named
	// name; peer is the receiver's Addr.
	Target(peer, name string) *actor.PID
	// Result is a finished request's answer, or why it failed.
	Result(f *actor.Future) (any, error)
	// Connected reports whether the path toward the other node is ready.
	Connected() bool
	// Arm starts counting a phase's failures; Failures counts the
	// operations lost since (at least once each), besides the calls that
	// failed, which the writers count.
	Arm()
	Failures() int64
	// Stats fills the runtime's own figures (bytes, batches), where it
	// has any.
	Stats(st *nodeapi.Stats)
	// Stop ends the node after the point.
	Stop() error
}

// DeadLetters counts an actor system's DeadLetterEvents: since it was
// made, and since the last Arm.
type DeadLetters struct {
	seen  atomic.Int64
	armed atomic.Int64 // seen at the last Arm
}

// CountDeadLetters subscribes a new count to sys's dead letters.
func CountDeadLetters(sys *actor.ActorSystem) *DeadLetters {
	d := &DeadLetters{}
	sys.EventStream.Subscribe(func(ev any) {
		if _, ok := ev.(*actor.DeadLetterEvent); ok {
			d.seen.Add(1)
		}
	})
	return d
}

// Arm starts a phase.
func (d *DeadLetters) Arm() { d.armed.Store(d.seen.Load()) }

// Since is the dead letters since the last Arm.
func (d *DeadLetters) Since() int64 { return d.seen.Load() - d.armed.Load() }
