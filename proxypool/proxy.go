package proxypool

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/poolpath"
)

// proxy is one proxy actor: it owns one pool link, paired with one worker
// of the peer's receiver pool. Callers sharded onto it queue their
// messages, encoded, on its link (remote's proxy queue); the first one
// into an idle queue wakes the proxy, which takes whatever is waiting,
// writes it as batch frames (up to BatchSize messages each), and blocks
// only in that write: backpressure from the link is the batching clock.
// No timers.
type proxy struct {
	m    *Manager
	link poolpath.Link
}

// Messages to a proxy.
type (
	// flush: its queue has messages (one per idle-to-busy turn).
	flush struct{}
	// linkClosed: its link has ended.
	linkClosed struct{}
	// drainMsg: its pool was torn down while the peer lives: write what
	// its queue holds (the queue takes nothing new), end the link with a
	// half-close so it all arrives, and stop; done closes when it has, or
	// when it will not (it stopped first).
	drainMsg struct{ done chan struct{} }
)

func proxyProps(m *Manager, link poolpath.Link) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &proxy{m: m, link: link}
	})
}

func (p *proxy) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		self, sys, closed := c.Self(), c.System(), p.link.Closed()
		p.link.OnQueued(func() { _ = actorhooks.Inject(sys, self, flush{}) }) // fails harmlessly once we are gone
		if !p.m.goOwned(func() {
			<-closed
			_ = actorhooks.Inject(sys, self, linkClosed{})
		}) {
			c.Exit(errors.New("proxypool: the remote layer has closed"))
		}
	case flush:
		// Yield once before taking the queue, behind the callers already
		// runnable: woken by the first of them, the proxy would otherwise
		// run ahead of the others and write batches of one or two. The
		// yield is the batching clock; there is no timer.
		runtime.Gosched()
		more, err := p.link.Flush()
		switch {
		case err != nil:
			// The link died under a batch: its calls fail as may have
			// executed when the pool is torn down; its sends and casts
			// were counted as dead letters, its replies rerouted.
			c.Exit(fmt.Errorf("proxypool: write to pool link %d: %w", p.link.Worker(), err))
		case more:
			_ = actorhooks.Inject(c.System(), c.Self(), flush{})
		}
	case linkClosed:
		c.Exit(fmt.Errorf("proxypool: pool link %d closed: %v", p.link.Worker(), p.link.Err()))
	case drainMsg:
		for {
			more, err := p.link.Flush()
			if err != nil || !more {
				break
			}
		}
		p.link.Finish()
		close(m.done)
		c.Stop(c.Self())
	case actor.Stopped:
		// What it wrote must arrive: a half-close, not a reset (a link
		// closed with unread bytes in its socket is reset, and the reset
		// destroys what the peer had not read yet).
		p.link.Finish()
		// Nothing more can be written: what is still queued is not sent.
		// Calls fail as not sent when the pool is torn down; sends and
		// casts are dead letters; replies are rerouted.
		p.link.DropQueued(fmt.Errorf("%w: proxy for pool link %d stopped", actor.ErrNotSent, p.link.Worker()))
	}
}

// Reclaim takes back the wake-ups left in the mailbox when the proxy
// ends: the messages themselves are in its link's queue (see Stopped).
func (p *proxy) Reclaim(msg any) bool {
	switch m := msg.(type) {
	case flush, linkClosed:
		return true
	case drainMsg:
		close(m.done) // it stopped first: nothing more will be written
		return true
	}
	return false
}
