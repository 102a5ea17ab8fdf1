package bridge

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// pipe is a protoactor process that runs fn on the first message it
// gets: a future piped to it (Future.PipeTo) tells the bridge it ended,
// however it ended.
type pipe struct {
	once sync.Once
	fn   func()
}

var _ actor.Process = (*pipe)(nil)

func (p *pipe) SendUserMessage(*actor.PID, any)   { p.once.Do(p.fn) }
func (p *pipe) SendSystemMessage(*actor.PID, any) { p.once.Do(p.fn) }
func (p *pipe) Stop(*actor.PID)                   { p.once.Do(p.fn) }

// newPipe registers a pipe running fn; remove unregisters it.
func (b *Bridge) newPipe(fn func()) (pid *actor.PID, remove func()) {
	reg := b.pas.ProcessRegistry
	pid, _ = reg.Add(&pipe{fn: fn}, "bridge-pipe"+reg.NextId())
	return pid, func() { reg.Remove(pid) }
}
