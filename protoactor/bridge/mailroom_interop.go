package bridge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	mr "github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/proto"
)

// MailroomPID is the protoactor PID of the mailroom actor pid. Send
// delivers to it; a request (RequestFuture, or Request from an actor) gets
// its answer (mailroom's Request); Watch gets Terminated when it ends
// (AddressTerminated when its node incarnation is gone).
func MailroomPID(pid mr.PID) *actor.PID {
	return actor.NewPID(NodeAddress(pid.Node), idPID+strconv.FormatUint(pid.Incarnation, 16)+"/"+strconv.FormatUint(pid.ID, 10))
}

// mrTarget is a mailroom actor or function named by a protoactor PID.
type mrTarget struct {
	pid  mr.PID // an actor by PID
	name string // an actor by name
	fn   string // a function
}

func parseMailroomID(node, id string) (mrTarget, bool) {
	if rest, ok := strings.CutPrefix(id, idName); ok && rest != "" {
		return mrTarget{name: rest}, true
	}
	if rest, ok := strings.CutPrefix(id, idFn); ok && rest != "" {
		return mrTarget{fn: rest}, true
	}
	rest, ok := strings.CutPrefix(id, idPID)
	if !ok {
		return mrTarget{}, false
	}
	incText, idText, ok := strings.Cut(rest, "/")
	inc, err1 := strconv.ParseUint(incText, 16, 64)
	n, err2 := strconv.ParseUint(idText, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return mrTarget{}, false
	}
	return mrTarget{pid: mr.PID{Node: node, Incarnation: inc, ID: n}}, true
}

// interopSend carries a protoactor message to a mailroom target: a send
// without a sender is mailroom's Send (or Cast), with a sender it is a
// request (Request, RequestNamed or Call) whose answer goes to the sender.
// A request runs on its own goroutine: a send made after it by the same
// sender may overtake it (unlike between protoactor actors).
func (b *Bridge) interopSend(node string, pid *actor.PID, msg any, sender *actor.PID) {
	t, ok := parseMailroomID(node, pid.Id)
	var reason error
	switch {
	case !ok:
		reason = fmt.Errorf("%w: %q names no mailroom actor or function", mr.ErrNoProcess, pid.Id)
	case b.stopping.Load():
		reason = errStoppedReason()
	}
	if _, isProto := msg.(proto.Message); reason == nil && t.fn != "" && !isProto {
		reason = badMessageReason(fmt.Errorf("%T is not a proto.Message; a mailroom function takes protobuf arguments", msg))
	}
	if reason != nil {
		if sender != nil {
			b.answer(sender, pid, nil, newError("request", node, t.pid.Incarnation, describe(pid), reason))
		} else {
			b.dropped(pid, msg, newError("send", node, t.pid.Incarnation, describe(pid), reason))
		}
		return
	}
	h := b.mr.lanes[hashString(pid.Id)%uint32(len(b.mr.lanes))]
	if sender == nil {
		switch {
		case t.fn != "":
			h.Cast(node, t.fn, msg.(proto.Message))
		case t.name != "":
			h.SendNamed(node, t.name, msg)
		default:
			h.Send(t.pid, msg)
		}
		return
	}
	ctx, cancel := context.WithCancel(b.ctx)
	removePipe := func() {}
	if sender.Address == b.addr && isFutureID(sender.Id) {
		// The future's own timeout cancels the request (and mailroom
		// cancels it on the node that took it).
		if proc, ok := b.pas.ProcessRegistry.GetLocal(sender.Id); ok {
			if f, ok := proc.(interface{ PipeTo(...*actor.PID) }); ok {
				var pipePID *actor.PID
				pipePID, removePipe = b.newPipe(cancel)
				f.PipeTo(pipePID)
			}
		}
	}
	started := b.goOwned(func() {
		defer cancel()
		defer removePipe()
		var res any
		var err error
		switch {
		case t.fn != "":
			res, err = h.Call(ctx, node, t.fn, msg.(proto.Message))
		case t.name != "":
			res, err = h.RequestNamed(ctx, node, t.name, msg)
		default:
			res, err = h.Request(ctx, t.pid, msg)
		}
		if err != nil && ctx.Err() != nil {
			if b.ctx.Err() == nil {
				return // the future ended first: nobody waits
			}
			err = mayHaveExecuted(newError("request", node, t.pid.Incarnation, describe(pid), errStoppedReason()))
		}
		b.answer(sender, pid, res, err)
	})
	if !started {
		cancel()
		removePipe()
		b.answer(sender, pid, nil, newError("request", node, t.pid.Incarnation, describe(pid), errStoppedReason()))
	}
}

// answer gives a request's result to its sender: a local future completes
// with it (an error as its result), any other sender receives it as a
// message from pid.
func (b *Bridge) answer(sender, pid *actor.PID, res any, err error) {
	if err != nil {
		b.stats.failedRequests.Add(1)
		res = err
	}
	if sender.Address == b.addr && isFutureID(sender.Id) {
		if !b.completeFuture(sender.Id, res) {
			b.stats.lateReplies.Add(1)
		}
		return
	}
	if err != nil {
		b.pas.Root.Send(sender, err)
		return
	}
	b.pas.Root.Send(sender, &actor.MessageEnvelope{Message: res, Sender: pid})
}

// interopSystem carries Watch, Unwatch and Stop to a mailroom actor.
func (b *Bridge) interopSystem(node string, pid *actor.PID, message any) {
	t, ok := parseMailroomID(node, pid.Id)
	byPID := ok && t.fn == "" && t.name == ""
	switch sm := message.(type) {
	case *actor.Watch:
		if sm.Watcher == nil {
			return
		}
		if !byPID || b.stopping.Load() {
			b.log.Debug("watch of a mailroom name or function: not supported, Terminated at once", "target", pid.Id)
			b.tellTerminated(sm.Watcher, pid, actor.TerminatedReason_NotFound)
			return
		}
		b.mr.sys.Send(b.mr.monitor, interopWatchMsg{pid: t.pid, watcher: sm.Watcher, watch: true})
	case *actor.Unwatch:
		if byPID && sm.Watcher != nil {
			b.mr.sys.Send(b.mr.monitor, interopWatchMsg{pid: t.pid, watcher: sm.Watcher})
		}
	case *actor.Stop:
		if byPID && t.pid.Node == b.self.node {
			b.mr.sys.StopActor(t.pid)
			return
		}
		b.log.Warn("mailroom cannot stop an actor on another node from here; stop it on its node", "target", pid.Id, "node", node)
	}
}

// interopWatchMsg asks the monitor to watch (or unwatch) a mailroom actor
// for a protoactor watcher.
type interopWatchMsg struct {
	pid     mr.PID
	watcher *actor.PID
	watch   bool
}

// interopWatch runs on the monitor: watchers by watched actor.
func (m *mailroom) interopWatch(c *mr.Context, watched map[mr.PID][]*actor.PID, msg interopWatchMsg) {
	ws := watched[msg.pid]
	for i, w := range ws {
		if w.Equal(msg.watcher) {
			if !msg.watch {
				ws = append(ws[:i], ws[i+1:]...)
			}
			msg.watch = false
			break
		}
	}
	if msg.watch {
		ws = append(ws, msg.watcher)
	}
	if len(ws) == 0 {
		delete(watched, msg.pid)
		c.Unwatch(msg.pid)
		return
	}
	watched[msg.pid] = ws
	c.Watch(msg.pid)
}

// interopTerminated tells the protoactor watchers of a mailroom actor
// that it ended.
func (b *Bridge) interopTerminated(pid mr.PID, watchers []*actor.PID, reason error) {
	why := actor.TerminatedReason_Stopped
	switch {
	case errors.Is(reason, mr.ErrNodeDown):
		why = actor.TerminatedReason_AddressTerminated
	case errors.Is(reason, mr.ErrNoProcess):
		why = actor.TerminatedReason_NotFound
	}
	who := MailroomPID(pid)
	for _, w := range watchers {
		b.tellTerminated(w, who, why)
	}
}
