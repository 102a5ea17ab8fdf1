package services

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The drain handshake. When a provider stops, the remote layer marks it
// draining (discovery and every link) and refuses new calls with
// ErrDraining, waits for the calls it runs, says goodbye and closes its
// links. Two races remain that would fail a call that never ran: a call
// a caller sent just before it learned of the drain can reach the
// provider after its goodbye, and a refusal sent after the goodbye
// arrives after the caller already failed the call as ErrNodeDown (may
// have executed). So before the remote layer proceeds, a stopping
// provider waits (bounded by Config.DrainAckWait and the Stop ctx) until
// every linked services node has acknowledged the drain; a caller
// acknowledges once it has marked the provider draining (no new call
// picks it) and none of its calls to the provider is still pending, so
// the provider's goodbye cannot overtake anything the caller is waiting
// for.

// ackActor is the name of the actor receiving drain acks.
const ackActor = "mailroom.services"

// ackBook records the drain acks this node received.
type ackBook struct {
	mu    sync.Mutex // protects got
	got   map[nodeInc]bool
	wake  chan struct{} // one slot: something changed
	count uint64
}

func newAckBook() *ackBook {
	return &ackBook{got: map[nodeInc]bool{}, wake: make(chan struct{}, 1)}
}

func (a *ackBook) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *ackBook) add(k nodeInc) {
	a.mu.Lock()
	a.got[k] = true
	a.count++
	a.mu.Unlock()
	a.poke()
}

func (a *ackBook) has(k nodeInc) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.got[k]
}

// ack text: "drained <from node> <from inc hex> <to inc hex>".
func ackText(from string, fromInc, toInc uint64) string {
	return fmt.Sprintf("drained %s %s %s", from, actor.FormatIncarnation(fromInc), actor.FormatIncarnation(toInc))
}

// receiveAck is the ack actor.
func (s *Services) receiveAck(c *actor.Context) {
	m, ok := c.Message().(*wrapperspb.StringValue)
	if !ok {
		return
	}
	f := strings.Fields(m.Value)
	if len(f) != 4 || f[0] != "drained" {
		return
	}
	fromInc, err1 := strconv.ParseUint(f[2], 16, 64)
	toInc, err2 := strconv.ParseUint(f[3], 16, 64)
	if err1 != nil || err2 != nil || toInc != s.sys.Incarnation() {
		return
	}
	s.acks.add(nodeInc{f[1], fromInc})
}

// sendAckWhenIdle acknowledges e's drain once none of this node's calls
// to it is pending. Owned by s.wg; ends early when s closes.
func (s *Services) sendAckWhenIdle(e *entry) {
	s.mu.Lock()
	if s.closed || e.acked {
		s.mu.Unlock()
		return
	}
	e.acked = true
	s.wg.Add(1)
	s.mu.Unlock()
	idle := s.reg.idle(e)
	go func() {
		defer s.wg.Done()
		select {
		case <-idle:
		case <-s.life.Done():
			return
		}
		s.sys.SendNamed(e.node, ackActor, &wrapperspb.StringValue{Value: ackText(s.sys.Name(), s.sys.Incarnation(), e.inc)})
		s.stats.acksSent.Add(1)
	}()
}

// stopHook runs first in System.Stop (before the remote layer's stop):
// this node stops picking itself, the remote layer's drain is started,
// and, if this node provides anything, it waits for the drain acks.
func (s *Services) stopHook(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	providing := len(s.provided) > 0
	s.mu.Unlock()
	s.reg.drainLocal(s.sys.Name())
	s.node.Drain(ctx)
	if !providing {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.DrainAckWait)
	defer cancel()
	for {
		missing := s.missingAcks()
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-s.acks.wake:
		case <-wctx.Done():
			s.log.Warn("stopping without every drain ack: calls from these nodes may fail as node down",
				"missing", strings.Join(missing, ", "), "waited", s.cfg.DrainAckWait.String())
			return nil
		}
	}
}

// missingAcks lists the linked services nodes that have not acked.
func (s *Services) missingAcks() []string {
	var out []string
	for _, p := range s.node.Peers() {
		if cur, ok := s.node.Peer(p.Node); !ok || cur.Incarnation != p.Incarnation {
			continue // gone (Peers may still list it)
		}
		if p.Meta[metaMarker] == "" {
			continue // not a services node
		}
		if !s.acks.has(nodeInc{p.Node, p.Incarnation}) {
			out = append(out, p.Node)
		}
	}
	return out
}

// close runs when the remote layer has closed every link: pending
// retries end with ErrStopped and the ack senders are waited for.
func (s *Services) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait() // they end at once: s.life is done and sends fail fast now
}
