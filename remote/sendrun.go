package remote

import (
	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/wire"
	"google.golang.org/protobuf/proto"
	"log/slog"
)

// A batch often holds several sends in a row to one actor (many callers
// of one service, one caller's burst). A link's reader decodes them into
// a run and delivers the run with one name lookup and one mailbox lock;
// anything else in the batch, or a send to another target, delivers the
// run first, so the order of the batch is the order of delivery.

// sendRun is the run a link's reader is gathering; reader only.
type sendRun struct {
	to       actor.PID
	name     string
	msgs     []any
	senders  []actor.PID
	received int // sends decoded since the last delivery, bad ones too
	// the codec of the last type decoded: a stream mostly repeats one
	codecType string
	codec     *wire.Codec
}

// maxRunCap is the largest run buffer a reader keeps between frames.
const maxRunCap = 4096

// dropSend makes a send that cannot be delivered (too large, or a
// payload that does not decode) a counted dead letter.
func (l *link) dropSend(el *wire.Element, err error) {
	n := l.node
	n.stats.badMessages.Add(1)
	to := sendTarget(n, el.To, el.ToName)
	n.peerLine(slog.LevelDebug, "message dropped", "peer", l.ends.PeerNode, "to", to.String(), "err", err)
	actorhooks.DeadLetter(n.sys, to, el.Sender, el.Type, err)
}

// addSend decodes a send into l's run, delivering the run first when the
// send is for another target. A payload that does not decode is a dead
// letter (counted), and the run goes on.
func (l *link) addSend(el *wire.Element) {
	n := l.node
	r := &l.run
	if len(r.msgs) > 0 && (r.name != el.ToName || r.to != el.To) {
		l.flushRun()
	}
	r.received++
	var msg any
	err := tooLarge(n, el) // never decoded (inbound.go)
	switch {
	case err != nil:
	case r.codec != nil && el.Type == r.codecType:
		msg, err = r.codec.Decode(el.Type, el.Payload)
	default:
		msg, err = decode(n, el.Type, el.Payload)
		if cd := n.codecs.Cached(el.Type); cd != nil {
			r.codecType, r.codec = el.Type, cd
		}
	}
	if err != nil {
		l.dropSend(el, err)
		return
	}
	if len(r.msgs) == 0 {
		r.to, r.name = el.To, el.ToName
	}
	r.msgs = append(r.msgs, msg)
	r.senders = append(r.senders, el.Sender)
}

// flushRun delivers l's run. A full Block mailbox makes the link wait
// (backpressure), until the link itself ends. While we deliver we do not
// read: silence then is ours, not the peer's (its pings wait in our
// socket), so liveness skips it. Only deliveries are marked: a reader
// blocked writing a pong to a peer that stopped reading is silence.
func (l *link) flushRun() {
	n := l.node
	r := &l.run
	if r.received > 0 {
		n.stats.received.Add(uint64(r.received))
		r.received = 0
	}
	if len(r.msgs) == 0 {
		return
	}
	l.dispatching.Store(true)
	var k int
	var err error
	switch {
	case len(r.msgs) > 1:
		k, err = actorhooks.DeliverRun(n.sys, l.ctx, r.to, r.name, r.msgs, r.senders)
	case r.name != "":
		err = actorhooks.DeliverNamed(n.sys, l.ctx, r.senders[0], r.name, r.msgs[0], nil)
	default:
		err = actorhooks.DeliverLocal(n.sys, l.ctx, r.senders[0], r.to, r.msgs[0], nil)
	}
	l.dispatching.Store(false)
	delivered := len(r.msgs)
	if err != nil {
		delivered = k
		to := sendTarget(n, r.to, r.name)
		for i := k; i < len(r.msgs); i++ {
			actorhooks.DeadLetter(n.sys, to, r.senders[i], r.msgs[i], err)
		}
	}
	n.stats.delivered.Add(uint64(delivered))
	clear(r.msgs)
	clear(r.senders)
	r.msgs, r.senders = r.msgs[:0], r.senders[:0]
	if cap(r.msgs) > maxRunCap {
		r.msgs, r.senders = nil, nil
	}
}

// sendTarget is the PID a dead letter of a send names: the target, or
// this node for a registered name.
func sendTarget(n *Node, to actor.PID, name string) actor.PID {
	if name != "" {
		return actor.PID{Node: n.sys.Name(), Incarnation: n.sys.Incarnation()}
	}
	return to
}

// decode is unmarshal with the node's registry and codecs.
func decode(n *Node, typ string, b []byte) (proto.Message, error) {
	return n.codecs.Unmarshal(n.types, typ, b)
}
