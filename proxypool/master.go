package proxypool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/poolpath"
)

// Messages to a master.
type (
	peerUp struct {
		inc      uint64
		poolSize int
	}
	peerGone struct{ inc uint64 }
	built    struct {
		gen   int
		inc   uint64
		links []poolpath.Link
		err   error
	}
	retry struct{ gen int }
)

var errPoolDisabled = errors.New("proxypool: the peer's receiver pool is disabled")

// master is the connection master for one peer node. It follows the
// peer's current incarnation, builds one proxy per worker of its receiver
// pool (each with its own link), publishes the pool, and tears it down
// the moment the incarnation goes or a proxy dies; then it builds again
// when it can. State is connected (pool published) or down.
type master struct {
	m    *Manager
	node string

	pool     poolpath.Pool
	proxies  map[actor.PID]bool
	inc      uint64 // the incarnation being followed (0: unknown)
	gen      int    // bumped to invalidate builds and retries in flight
	building bool
	backoff  time.Duration
	timer    *time.Timer
	builds   int
}

func masterProps(m *Manager, node string) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &master{m: m, node: node} })
}

func (ms *master) Receive(c *actor.Context) {
	switch msg := c.Message().(type) {
	case actor.Started:
		ms.publish(c, Down)
		if info, ok := ms.m.node.Peer(ms.node); ok {
			ms.inc = info.Incarnation
		}
		ms.build(c)
	case peerUp:
		if ms.pool != nil && ms.pool.Incarnation() == msg.inc {
			return
		}
		if ms.pool != nil {
			ms.teardown(c, fmt.Errorf("%s is now incarnation %016x", ms.node, msg.inc), false)
		}
		if msg.inc != ms.inc {
			ms.inc = msg.inc
			ms.gen++ // a build for the old incarnation is now stale
			ms.building = false
		}
		ms.build(c)
	case peerGone:
		if ms.pool != nil && ms.pool.Incarnation() == msg.inc {
			ms.teardown(c, fmt.Errorf("incarnation %016x of %s is gone", msg.inc, ms.node), false)
		}
		if ms.inc == msg.inc {
			ms.inc = 0
			ms.gen++
			ms.building = false
		}
	case built:
		ms.onBuilt(c, msg)
	case retry:
		if msg.gen == ms.gen {
			ms.build(c)
		}
	case actor.Terminated:
		if ms.proxies[msg.PID] {
			// The peer may well live: the other proxies write what they
			// hold before the next pool (fenced behind them) takes over.
			ms.teardown(c, fmt.Errorf("proxy %s ended: %v", msg.PID, msg.Reason), true)
			ms.build(c)
		}
	case actor.Stopping:
		ms.gen++
		if ms.timer != nil {
			ms.timer.Stop()
		}
		// StopConnection: the peer lives; the proxies write what they hold
		// before they stop with this master (at most the heartbeat window:
		// the peer's fence waits no longer). Not when the node stops.
		drained := ms.teardown(c, errors.New("connection stopped"), !ms.m.isClosing())
		ms.m.waitDrained(drained)
		ms.m.setInfo(ms.node, nil)
	}
}

// build dials a fresh pool in the background, unless one exists or is on
// its way.
func (ms *master) build(c *actor.Context) {
	if ms.pool != nil || ms.building || ms.m.isClosing() {
		return
	}
	ms.building = true
	ms.gen++
	gen, self, sys, m, node := ms.gen, c.Self(), c.System(), ms.m, ms.node
	if !m.goOwned(func() {
		links, inc, err := m.dialPool(node)
		if actorhooks.Inject(sys, self, built{gen: gen, inc: inc, links: links, err: err}) != nil {
			for _, l := range links {
				l.Close(errors.New("connection master gone"))
			}
		}
	}) {
		ms.building = false
	}
}

// dialPool links to the peer's current incarnation and dials one pool
// link per worker.
func (m *Manager) dialPool(node string) ([]poolpath.Link, uint64, error) {
	ctx, cancel := context.WithTimeout(m.ctx, 2*(m.node.Config().DialTimeout+m.node.Config().HandshakeTimeout))
	defer cancel()
	if err := m.node.Connect(ctx, node, ""); err != nil {
		return nil, 0, err
	}
	info, ok := m.node.Peer(node)
	if !ok {
		return nil, 0, fmt.Errorf("%w: %s has no live incarnation", actor.ErrUnreachable, node)
	}
	if info.PoolWorkers == discovery.NoReceiverPool {
		return nil, info.Incarnation, errPoolDisabled
	}
	links := make([]poolpath.Link, 0, info.PoolWorkers)
	for i := range info.PoolWorkers {
		l, err := m.host.DialPool(ctx, node, info.Incarnation, i)
		if err != nil {
			for _, l := range links {
				l.Close(errors.New("pool build failed"))
			}
			return nil, info.Incarnation, err
		}
		links = append(links, l)
	}
	return links, info.Incarnation, nil
}

func (ms *master) onBuilt(c *actor.Context, b built) {
	closeAll := func(reason string) {
		for _, l := range b.links {
			l.Close(errors.New(reason))
		}
	}
	if b.gen != ms.gen {
		closeAll("stale pool build")
		ms.build(c) // the state changed while dialing: try again for what is current
		return
	}
	ms.building = false
	if ms.inc == 0 || ms.inc != b.inc {
		ms.inc = b.inc
	}
	switch {
	case errors.Is(b.err, errPoolDisabled):
		ms.publish(c, Down) // stays down until the peer announces a pool
		return
	case b.err != nil:
		ms.scheduleRetry(c, b.err)
		return
	}
	batch := int(ms.m.batch.Load())
	proxies := make([]actor.PID, 0, len(b.links))
	links := make([]poolpath.Link, 0, len(b.links))
	ms.proxies = make(map[actor.PID]bool, len(b.links))
	for _, l := range b.links {
		if ms.m.onLink != nil {
			ms.m.onLink(l)
		}
		pid, err := c.Spawn(proxyProps(ms.m, l))
		if err != nil {
			l.Close(err)
			continue
		}
		proxies = append(proxies, pid)
		links = append(links, l)
		ms.proxies[pid] = true
	}
	pool, err := ms.m.host.Publish(ms.node, b.inc, proxies, poolpath.Options{
		Links: links, QueueEntries: ms.m.cfg.ProxyQueue, QueueBytes: ms.m.cfg.ProxyQueueBytes,
		BatchSize: batch, FailFast: ms.m.cfg.Policy == actor.FailFast,
		Dropped: ms.m.dropped(ms.node),
	})
	if err != nil || len(proxies) != len(b.links) {
		for pid := range ms.proxies {
			c.Stop(pid)
		}
		ms.proxies = nil
		if err == nil {
			err = errors.New("a proxy failed to start")
		}
		ms.scheduleRetry(c, err)
		return
	}
	ms.pool = pool
	ms.builds++
	ms.backoff = 0
	ms.publish(c, Connected)
	c.Logger().Debug("pool published", "peer", ms.node, "incarnation", actor.FormatIncarnation(b.inc), "proxies", len(proxies), "batch", batch)
}

func (ms *master) scheduleRetry(c *actor.Context, err error) {
	ms.publish(c, Down)
	if ms.inc == 0 {
		return // wait for the peer to announce itself
	}
	cfg := ms.m.cfg
	ms.backoff = min(max(2*ms.backoff, cfg.RetryMin), cfg.RetryMax)
	c.Logger().Debug("pool build failed; retrying", "peer", ms.node, "in", ms.backoff, "err", err)
	gen, self, sys := ms.gen, c.Self(), c.System()
	if ms.timer != nil {
		ms.timer.Stop()
	}
	ms.timer = time.AfterFunc(ms.backoff, func() { _ = actorhooks.Inject(sys, self, retry{gen: gen}) })
}

// teardown unpublishes the pool at once (traffic falls back to the native
// path, fenced behind what the pool's links carried when the peer lives;
// queued calls fail as not sent, written ones as node down) and ends its
// proxies. With drain (the peer lives), each proxy first writes the sends
// it holds, then ends its link with a half-close (PoolLink.Finish) so
// they all arrive; the channels returned close as each has. Otherwise
// (the peer is gone) they stop at once and what they held becomes dead
// letters.
func (ms *master) teardown(c *actor.Context, reason error, drain bool) []chan struct{} {
	if ms.pool != nil {
		ms.m.host.Unpublish(ms.pool, reason)
		c.Logger().Info("pool torn down", "peer", ms.node, "reason", reason)
	}
	var drained []chan struct{}
	for pid := range ms.proxies {
		if drain {
			d := make(chan struct{})
			if actorhooks.Inject(c.System(), pid, drainMsg{done: d}) == nil {
				drained = append(drained, d)
				continue
			}
		}
		c.Stop(pid)
	}
	ms.pool, ms.proxies = nil, nil
	ms.publish(c, Down)
	return drained
}

// waitDrained waits until the proxies have written what they held, at
// most the heartbeat window of the remote layer (the peer's fence on the
// native path waits no longer for the pool's links).
func (m *Manager) waitDrained(drained []chan struct{}) {
	if len(drained) == 0 {
		return
	}
	rc := m.node.Config()
	t := time.NewTimer(rc.Liveness.HeartbeatInterval * time.Duration(rc.Liveness.HeartbeatMisses))
	defer t.Stop()
	for _, d := range drained {
		select {
		case <-d:
		case <-t.C:
			return
		}
	}
}

func (ms *master) publish(c *actor.Context, st Status) {
	info := &Info{Node: ms.node, Status: st, Master: c.Self(), Incarnation: ms.inc, Builds: ms.builds}
	if st == Connected && ms.pool != nil {
		info.Proxies = len(ms.pool.Proxies())
		info.Incarnation = ms.pool.Incarnation()
	}
	ms.m.setInfo(ms.node, info)
}
