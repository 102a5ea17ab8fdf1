package bridge

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/mailroom-go/mailroom/protoactor/internal/wirepb"
)

// deliver handles one envelope from peer incarnation from, on an
// endpoint actor's goroutine. Nothing in it is trusted: an unknown peer,
// a dead incarnation, an unknown type or target is refused (counted, and
// told to the requester when there is one); the bridge keeps serving.
func (b *Bridge) deliver(from peerKey, env *wirepb.Envelope, targets *targetCache) {
	b.stats.received.Add(1)
	p := b.peers.get(from)
	if p == nil {
		b.stats.unknownPeer.Add(1)
		b.limitedWarn("message from a node incarnation without a session dropped (it is gone, or it is not a bridge)",
			"node", from.node, "incarnation", fmt.Sprintf("%016x", from.inc))
		return
	}
	if env.TargetIncarnation != 0 && env.TargetIncarnation != b.self.inc {
		b.refuse(p, env, noProcessCode, fmt.Sprintf("node %s is incarnation %016x; the PID names %016x, an earlier one",
			b.self.node, b.self.inc, env.TargetIncarnation))
		return
	}
	switch env.Kind {
	case wirepb.Kind_KIND_USER:
		b.deliverUser(p, env, targets)
	case wirepb.Kind_KIND_SYSTEM:
		b.deliverSystem(p, env)
	case wirepb.Kind_KIND_FAILURE:
		b.deliverFailureEnv(p.key, env)
	default:
		b.stats.badMessages.Add(1)
		b.limitedWarn("envelope of an unknown kind dropped", "node", from.node, "kind", int32(env.Kind))
	}
}

func senderOf(env *wirepb.Envelope) *actor.PID {
	if env.SenderId == "" {
		return nil
	}
	return &actor.PID{Address: env.SenderAddress, Id: env.SenderId}
}

func (b *Bridge) deliverUser(p *peer, env *wirepb.Envelope, targets *targetCache) {
	msg, err := b.types.decode(env.Type, env.Payload, false)
	if err != nil {
		b.refuseBadPayload(p, env, err)
		return
	}
	if isFutureID(env.Target) {
		// A reply. A future the bridge already failed (node loss) is gone
		// from the registry: the reply is late.
		b.pending.take(env.Target)
		if !b.completeFuture(env.Target, msg) {
			b.stats.lateReplies.Add(1)
		}
		return
	}
	sender := senderOf(env)
	if sender != nil {
		if _, ok := b.pas.ProcessRegistry.GetLocal(env.Target); !ok {
			b.refuse(p, env, noProcessCode, fmt.Sprintf("no protoactor process %q on node %s", env.Target, b.self.node))
			return
		}
	}
	target := targets.get(env.Target)
	if sender == nil && len(env.Header) == 0 {
		b.pas.Root.Send(target, msg)
		return
	}
	b.pas.Root.Send(target, &actor.MessageEnvelope{Header: env.Header, Message: msg, Sender: sender})
}

func (b *Bridge) deliverSystem(p *peer, env *wirepb.Envelope) {
	msg, err := b.types.decode(env.Type, env.Payload, true)
	if err != nil {
		b.refuseBadPayload(p, env, err)
		return
	}
	target := actor.NewPID(b.addr, env.Target)
	switch m := msg.(type) {
	case *actor.Watch:
		if m.Watcher == nil {
			b.stats.badMessages.Add(1)
			return
		}
		if !p.addWatcher(m.Watcher, target, b.cfg.MaxWatchesPerPeer) {
			b.stats.watchesRefused.Add(1)
			b.limitedWarn("watch refused: the peer holds MaxWatchesPerPeer watches on this node",
				"node", p.key.node, "limit", b.cfg.MaxWatchesPerPeer, "target", env.Target)
			return
		}
	case *actor.Unwatch:
		if m.Watcher == nil {
			b.stats.badMessages.Add(1)
			return
		}
		p.removeWatcher(m.Watcher.Id, env.Target)
	case *actor.Terminated:
		// An actor of the peer that a local actor watched has ended.
		if m.Who == nil {
			b.stats.badMessages.Add(1)
			return
		}
		p.removeWatching(env.Target, m.Who.Id)
	case *actor.Stop:
	default:
		b.stats.badMessages.Add(1)
		b.limitedWarn("system message of an unexpected type dropped", "node", p.key.node, "type", env.Type)
		return
	}
	proc, _ := b.pas.ProcessRegistry.GetLocal(env.Target) // the dead-letter process if none
	proc.SendSystemMessage(target, msg)
}

// deliverFailureEnv hands a peer's refusal to the local requester.
func (b *Bridge) deliverFailureEnv(from peerKey, env *wirepb.Envelope) {
	if env.FailureCode == badMessageCode {
		b.stats.remoteBadMessages.Add(1)
	}
	if env.Target == "" {
		b.limitedWarn("a message from this node was refused", "node", from.node, "reason", env.FailureText)
		return
	}
	err := wireError(from, env)
	if isFutureID(env.Target) {
		b.pending.take(env.Target)
		if b.completeFuture(env.Target, err) {
			b.stats.failedRequests.Add(1)
		} else {
			b.stats.lateReplies.Add(1)
		}
		return
	}
	b.stats.failedRequests.Add(1)
	b.pas.Root.Send(actor.NewPID(b.addr, env.Target), err)
}

// refuseBadPayload refuses an envelope whose payload cannot be decoded:
// logged and counted here, and told to the sender's node (its requester,
// or the bridge itself for a plain send), naming this node and the type.
func (b *Bridge) refuseBadPayload(p *peer, env *wirepb.Envelope, err error) {
	b.stats.badMessages.Add(1)
	var text string
	if errors.Is(err, errUnregistered) {
		text = fmt.Sprintf("message type %q is not registered on node %s (register it there with System.RegisterTypes, or set the bridge's Config.Types)", env.Type, b.self.node)
	} else {
		text = fmt.Sprintf("node %s cannot decode it: %v", b.self.node, err)
	}
	b.limitedWarn("message refused", "from", p.key.node, "target", env.Target, "reason", text)
	if env.Kind == wirepb.Kind_KIND_USER && isFutureID(env.Target) {
		// A reply this node cannot read: its future fails here (the
		// request was executed), and the replying node hears of it.
		b.pending.take(env.Target)
		err := executedBadReply(p.key.node, p.key.inc, "", errors.New(text))
		if b.completeFuture(env.Target, err) {
			b.stats.failedRequests.Add(1)
		}
	}
	if senderOf(env) == nil && env.Kind == wirepb.Kind_KIND_USER {
		b.report(nodeAddr(p.key), &wirepb.Envelope{Kind: wirepb.Kind_KIND_FAILURE, TargetIncarnation: p.key.inc, FailureCode: badMessageCode, FailureText: text})
		return
	}
	b.refuse(p, env, badMessageCode, text)
}

// refuse tells the requester of env (if any) why env was not delivered;
// a plain send is a protoactor dead letter here.
func (b *Bridge) refuse(p *peer, env *wirepb.Envelope, code, text string) {
	sender := senderOf(env)
	if sender == nil || env.Kind != wirepb.Kind_KIND_USER {
		b.stats.dropped.Add(1)
		b.pas.EventStream.Publish(&actor.DeadLetterEvent{PID: actor.NewPID(b.addr, env.Target)})
		return
	}
	a, ok := parseAddress(sender.Address)
	if !ok {
		b.stats.dropped.Add(1)
		return
	}
	// The requester's own node, usually p's, may be a third one (a
	// forwarded request).
	b.report(a, &wirepb.Envelope{
		Kind:              wirepb.Kind_KIND_FAILURE,
		Target:            sender.Id,
		TargetIncarnation: a.inc,
		SenderAddress:     b.addr, // the failure comes from the refused target
		SenderId:          env.Target,
		FailureCode:       code,
		FailureText:       text,
	})
}

// report sends a failure envelope to node a through its session.
func (b *Bridge) report(a nodeAddr, env *wirepb.Envelope) {
	if a.node == b.self.node {
		b.deliverFailureEnv(b.self.peerKey(), env)
		return
	}
	h := hashString(env.Target)
	b.route(&outMsg{
		node:     a.node,
		inc:      a.inc,
		target:   actor.NewPID(NodeAddress(a.node), env.Target),
		env:      env,
		lane:     int(h % uint32(b.cfg.Lanes)),
		endpoint: int((h >> 16) % endpointCount),
	})
}

// limitedWarn logs at Warn at most warnBurst times per second, then at
// Debug: a hostile peer cannot flood the log.
func (b *Bridge) limitedWarn(msg string, args ...any) {
	now := time.Now().Unix()
	if b.warn.second.Load() != now {
		b.warn.second.Store(now)
		b.warn.count.Store(0)
	}
	if b.warn.count.Add(1) <= warnBurst {
		b.log.Warn(msg, args...)
		return
	}
	b.log.Debug(msg, args...)
}

const warnBurst = 10

// warnWindow is limitedWarn's state.
type warnWindow struct {
	second atomic.Int64
	count  atomic.Int64
}

// targetCache keeps the PIDs of local targets an endpoint delivers to: a
// PID caches its process, so a steady target costs no registry lookup
// and no allocation per message. Not safe for concurrent use: each
// endpoint actor has its own. Futures (one reply each) are not cached.
type targetCache struct {
	addr string
	m    map[string]*actor.PID
}

// maxTargets bounds a cache: ids arrive from peers.
const maxTargets = 4096

func newTargetCache(addr string) *targetCache {
	return &targetCache{addr: addr, m: make(map[string]*actor.PID)}
}

func (c *targetCache) get(id string) *actor.PID {
	if pid, ok := c.m[id]; ok {
		return pid
	}
	if len(c.m) >= maxTargets {
		clear(c.m)
	}
	pid := actor.NewPID(c.addr, id)
	c.m[id] = pid
	return pid
}
