package proxypool

import (
	"errors"
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/remote"
)

// proxy is one proxy actor: it owns one pool link, paired with one worker
// of the peer's receiver pool. Its mailbox is the queue callers are
// sharded onto; it takes whatever is waiting (up to BatchSize), writes it
// as one frame, and blocks only in that write: backpressure from the link
// is the batching clock. No timers.
type proxy struct {
	m     *Manager
	link  *remote.PoolLink
	batch int
	items []*remote.Outgoing
}

// linkClosed tells a proxy its link has ended.
type linkClosed struct{}

// drainMsg asks a proxy whose pool was torn down while the peer lives to
// write what it holds (everything queued before this message), end its
// link with a half-close and stop; done closes when it has, or when it
// will not (it stopped first).
type drainMsg struct{ done chan struct{} }

func proxyProps(m *Manager, link *remote.PoolLink, batch int) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &proxy{m: m, link: link, batch: batch}
	}).WithMailbox(m.cfg.ProxyQueue, m.cfg.Policy)
}

func (p *proxy) BatchLimit() int { return p.batch }

func (p *proxy) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		self, sys, closed := c.Self(), c.System(), p.link.Closed()
		if !p.m.goOwned(func() {
			<-closed
			_ = sys.Inject(self, linkClosed{}) // fails harmlessly if we are gone
		}) {
			c.Exit(errors.New("proxypool: the remote layer has closed"))
		}
	case linkClosed:
		c.Exit(fmt.Errorf("proxypool: pool link %d closed: %v", p.link.Worker(), p.link.Err()))
	case drainMsg:
		p.link.Finish()
		close(m.done)
		c.Stop(c.Self())
	case actor.Stopped:
		// What it wrote must arrive: a half-close, not a reset.
		p.link.Finish()
	}
}

// ReceiveBatch writes everything that was waiting as one batch.
func (p *proxy) ReceiveBatch(c *actor.Context, msgs []any) {
	items := p.items[:0]
	for i, m := range msgs {
		switch o := m.(type) {
		case *remote.Outgoing:
			items = append(items, o)
		case drainMsg:
			// The pool was torn down while the peer lives: write what came
			// before, end the link so it all arrives, and stop. What came
			// after (a sender that raced the teardown) is not sent.
			if len(items) > 0 {
				if err := p.link.WriteBatch(items); err != nil {
					p.drop(c, items, fmt.Errorf("%w: pool link failed during the write (may have been delivered): %v", actor.ErrNodeDown, err))
				}
			}
			clear(items)
			var rest []*remote.Outgoing
			for _, m := range msgs[i+1:] {
				switch o := m.(type) {
				case *remote.Outgoing:
					rest = append(rest, o)
				case drainMsg:
					close(o.done)
				}
			}
			p.drop(c, rest, fmt.Errorf("%w: its pool was torn down", actor.ErrNotSent))
			p.items = items[:0]
			p.link.Finish()
			close(o.done)
			c.Stop(c.Self())
			return
		case linkClosed:
			// Nothing more can be written: what is left of this batch, on
			// both sides of the notice, is not sent (the runtime counts the
			// whole batch as handled). Calls fail as not sent when the pool
			// is torn down; sends and casts are dead letters.
			for _, rest := range msgs[i+1:] {
				switch o := rest.(type) {
				case *remote.Outgoing:
					items = append(items, o)
				case drainMsg:
					close(o.done) // nothing more will be written
				}
			}
			p.drop(c, items, fmt.Errorf("%w: pool link closed", actor.ErrNotSent))
			clear(items)
			p.items = items[:0]
			c.Exit(fmt.Errorf("proxypool: pool link %d closed: %v", p.link.Worker(), p.link.Err()))
			return
		}
	}
	if err := p.link.WriteBatch(items); err != nil {
		// The link died under this batch: calls in it fail as may have
		// executed when the pool is torn down; sends and casts are counted
		// here, as they may or may not have arrived.
		p.drop(c, items, fmt.Errorf("%w: pool link failed during the write (may have been delivered): %v", actor.ErrNodeDown, err))
		c.Exit(fmt.Errorf("proxypool: write to pool link %d: %w", p.link.Worker(), err))
	}
	clear(items)
	p.items = items[:0]
}

// drop accounts for items that will not be written here: replies are
// rerouted natively (a caller must never be left waiting), calls are
// answered by the pool's teardown, sends and casts are dead letters.
func (p *proxy) drop(c *actor.Context, items []*remote.Outgoing, reason error) {
	for _, o := range items {
		o.Release()
		if !p.Reclaim(o) {
			c.System().DeadLetter(actor.PID{Node: o.Node()}, actor.PID{}, o, reason)
		}
	}
}

// Reclaim takes back what is left in the mailbox when the proxy ends:
// the same rules as drop; only sends and casts become dead letters.
func (p *proxy) Reclaim(msg any) bool {
	if d, ok := msg.(drainMsg); ok {
		close(d.done) // it stopped first: nothing more will be written
		return true
	}
	o, ok := msg.(*remote.Outgoing)
	if !ok {
		return false
	}
	o.Release()
	switch {
	case o.IsCall():
		return true // its pool's teardown fails it (not sent)
	case o.IsReply():
		return o.Reroute()
	}
	return false
}
