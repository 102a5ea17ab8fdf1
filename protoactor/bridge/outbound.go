package bridge

import (
	"strings"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/mailroom-go/mailroom/protoactor/internal/wirepb"
)

// endpointCount is how many endpoint actors a bridge runs, named
// "protoactor.v1.0" to "protoactor.v1.7": a message goes to the one its
// target hashes to, so one target's messages keep their order and
// different targets are decoded in parallel. Part of the protocol: both
// sides must agree.
const endpointCount = 8

// resolve is the actor system's address resolver: it takes every PID
// whose address is a mailroom address and leaves the others (protoactor's
// own host:port remote may run alongside).
func (b *Bridge) resolve(pid *actor.PID) (actor.Process, bool) {
	if b.stopping.Load() {
		return nil, false
	}
	if p := b.procs.get(pid.Address); p != nil {
		return b.local(p, pid)
	}
	a, ok := parseAddress(pid.Address)
	if !ok {
		return nil, false
	}
	p := &remoteProcess{b: b, to: a}
	if a.node == b.self.node && a.inc != 0 && a.inc != b.self.inc {
		p.stale = true
	}
	b.procs.put(pid.Address, p)
	return b.local(p, pid)
}

// local returns the local process for a PID whose address names this
// node's current incarnation (by name: NodeAddress(node)), else p.
func (b *Bridge) local(p *remoteProcess, pid *actor.PID) (actor.Process, bool) {
	if p.to.node != b.self.node || p.stale || isMailroomID(pid.Id) {
		return p, true
	}
	return b.pas.ProcessRegistry.GetLocal(pid.Id)
}

// procCache keeps one process per mailroom address (a PID caches its
// process too, so this serves PIDs built anew for every message).
type procCache struct {
	mu sync.RWMutex // protects m
	m  map[string]*remoteProcess
}

// maxProcs bounds the cache: addresses also arrive from peers (senders).
const maxProcs = 4096

func (c *procCache) init() { c.m = make(map[string]*remoteProcess) }

func (c *procCache) get(addr string) *remoteProcess {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[addr]
}

func (c *procCache) put(addr string, p *remoteProcess) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxProcs {
		clear(c.m)
	}
	c.m[addr] = p
}

// remoteProcess stands for every protoactor process at one mailroom
// address (and for mailroom targets, by their ids).
type remoteProcess struct {
	b  *Bridge
	to nodeAddr
	// stale: the address names an earlier incarnation of this node.
	stale bool
}

var _ actor.Process = (*remoteProcess)(nil)

func (r *remoteProcess) SendUserMessage(pid *actor.PID, message any) {
	header, msg, sender := actor.UnwrapEnvelope(message)
	if isMailroomID(pid.Id) {
		r.b.interopSend(r.to.node, pid, msg, sender)
		return
	}
	r.b.sendUser(r, pid, header, msg, sender)
}

func (r *remoteProcess) SendSystemMessage(pid *actor.PID, message any) {
	if isMailroomID(pid.Id) {
		r.b.interopSystem(r.to.node, pid, message)
		return
	}
	r.b.sendSystem(r, pid, message)
}

func (r *remoteProcess) Stop(pid *actor.PID) { r.SendSystemMessage(pid, &actor.Stop{}) }

func isMailroomID(id string) bool { return strings.HasPrefix(id, "mailroom:") }

// newOut starts an outgoing message to pid at r.
func (b *Bridge) newOut(r *remoteProcess, pid *actor.PID, kind wirepb.Kind, msg any) outMsg {
	h := hashString(pid.Id)
	return outMsg{
		node:     r.to.node,
		inc:      r.to.inc,
		target:   pid,
		msg:      msg,
		env:      &wirepb.Envelope{Kind: kind, Target: pid.Id, TargetIncarnation: r.to.inc},
		lane:     int(h % uint32(b.cfg.Lanes)),
		endpoint: int((h >> 16) % endpointCount),
	}
}

// send finishes m: refused at once when it cannot leave, else routed.
func (b *Bridge) send(r *remoteProcess, m *outMsg) {
	switch {
	case b.stopping.Load():
		b.fail(m, errStoppedReason())
	case r.stale:
		b.fail(m, staleReason(b.self.peerKey(), r.to.inc))
	default:
		b.route(m)
	}
}

// sendUser sends a user message; a local sender is a requester.
func (b *Bridge) sendUser(r *remoteProcess, pid *actor.PID, header actor.ReadonlyMessageHeader, msg any, sender *actor.PID) {
	m := b.newOut(r, pid, wirepb.Kind_KIND_USER, msg)
	if sender != nil {
		m.env.SenderAddress, m.env.SenderId = sender.Address, sender.Id
		if sender.Address == b.addr {
			m.requester, m.future = sender, isFutureID(sender.Id)
		}
	}
	typ, payload, err := encode(msg)
	if err != nil {
		b.fail(&m, badMessageReason(err))
		return
	}
	m.env.Type, m.env.Payload = typ, payload
	if header != nil && header.Length() > 0 {
		m.env.Header = header.ToMap()
	}
	b.send(r, &m)
}

// sendSystem sends Watch, Unwatch, Terminated or Stop, keeping the watch
// records on the way.
func (b *Bridge) sendSystem(r *remoteProcess, pid *actor.PID, message any) {
	m := b.newOut(r, pid, wirepb.Kind_KIND_SYSTEM, message)
	switch sm := message.(type) {
	case *actor.Watch:
		if sm.Watcher != nil && sm.Watcher.Address == b.addr {
			m.watcher = sm.Watcher
		}
	case *actor.Unwatch:
		if sm.Watcher != nil {
			b.forgetWatching(r.to, sm.Watcher.Id, pid.Id)
		}
	case *actor.Terminated:
		// A local actor the remote pid watched has ended.
		if sm.Who != nil {
			if p := b.peers.get(peerKey{r.to.node, r.to.inc}); p != nil {
				p.removeWatcher(pid.Id, sm.Who.Id)
			}
		}
	case *actor.Stop:
	default:
		b.stats.dropped.Add(1)
		b.log.Warn("system message not carried to another node", "target", pid.String(), "type", typeName(message))
		return
	}
	typ, payload, err := encode(message)
	if err != nil {
		b.fail(&m, badMessageReason(err))
		return
	}
	m.env.Type, m.env.Payload = typ, payload
	b.send(r, &m)
}

// forgetWatching drops the record of local watcher watching watchee at a
// (an Unwatch).
func (b *Bridge) forgetWatching(a nodeAddr, watcher, watchee string) {
	key := a.peerKey()
	if a.inc == 0 {
		s := b.sessions.get(a.node)
		s.mu.Lock()
		if s.peer != nil {
			key = s.peer.key
		}
		s.mu.Unlock()
	}
	if p := b.peers.get(key); p != nil {
		p.removeWatching(watcher, watchee)
	}
}

func (a nodeAddr) peerKey() peerKey { return peerKey(a) }
