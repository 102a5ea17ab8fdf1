package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/wire"
)

// Draining reports whether Drain ran (System.Stop drains first): the node
// refuses new inbound calls and discovery lists it as draining.
func (n *Node) Draining() bool { return n.isDraining() }

func (n *Node) isDraining() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.draining
}

// Drain marks the node draining: discovery and every peer are told, and
// new inbound calls are refused with ErrDraining (not executed) while the
// calls already running finish. System.Stop drains first.
func (n *Node) Drain(ctx context.Context) {
	n.mu.Lock()
	if n.draining {
		n.mu.Unlock()
		return
	}
	n.draining = true
	meta := n.meta
	n.mu.Unlock()
	if err := n.disc.Update(ctx, n.self()); err != nil {
		n.log.Warn("could not announce draining to discovery", "err", err)
	}
	for _, p := range n.livePeers() {
		p.sendCtl(&wire.Element{Kind: wire.KindControl, Control: &wire.Control{Op: wire.CtlAnnounce, Draining: true, Meta: meta}})
	}
}

// shutdown is the System.Stop hook: drain, finish running calls within
// ctx, say goodbye, close every link, deregister, stop goroutines.
func (n *Node) shutdown(ctx context.Context) error {
	if n.startFailed.Load() {
		return nil
	}
	var errs []error
	n.Drain(ctx)
	done := make(chan struct{})
	go func() { n.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("remote: stop: calls still running: %w", ctx.Err()))
	}
	n.waitOwed(ctx)
	n.mu.Lock()
	n.closing = true
	n.mu.Unlock()
	peers := n.livePeers()
	var said []*link
	for _, p := range peers {
		p.mu.Lock()
		links := make([]*link, 0, len(p.links))
		for l := range p.links {
			links = append(links, l)
		}
		p.mu.Unlock()
		for _, l := range links {
			// Clean: everything taken from this link is answered on it
			// already, so what the peer still waits for was never taken.
			clean := l.owed.Load() == 0
			seq, err := l.enqueueEl(&wire.Element{Kind: wire.KindGoodbye, Reason: "node stopping", Clean: clean}, false, nil)
			if err == nil {
				waitFlushed(ctx, l, seq)
				l.halfClose()
				said = append(said, l)
			}
		}
	}
	// A lingering close: the peer closes each link once it has read our
	// goodbye. Closing first, with its frames unread in our buffer, would
	// make the kernel reset the connection and drop the goodbye.
	lingerFor(ctx, said, time.Second)
	for _, p := range peers {
		n.incarnationGoneQuiet(p, errors.New("local node stopping"))
	}
	if err := n.disc.Stop(ctx); err != nil {
		errs = append(errs, fmt.Errorf("remote: stop discovery: %w", err))
	}
	n.closeAll()
	actorhooks.SetTransport(n.sys, nil)
	return errors.Join(errs...)
}

// waitOwed waits until every request taken from a link has been answered,
// so goodbyes can be clean: within ctx and at most 5 s (an actor may never
// answer; then the goodbye says so and its callers get node down).
func (n *Node) waitOwed(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		owed := int64(0)
		for _, p := range n.livePeers() {
			p.mu.Lock()
			for l := range p.links {
				owed += l.owed.Load()
			}
			p.mu.Unlock()
		}
		if owed == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// lingerFor waits until every link in ls has ended, at most d.
func lingerFor(ctx context.Context, ls []*link, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for _, l := range ls {
		select {
		case <-l.done:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// waitFlushed waits briefly for a frame to reach the kernel.
func waitFlushed(ctx context.Context, l *link, seq uint64) {
	deadline := time.Now().Add(500 * time.Millisecond)
	for l.flushed.Load() < seq && !l.isClosed() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
}

// incarnationGoneQuiet ends a peer because this node stops.
func (n *Node) incarnationGoneQuiet(p *peer, reason error) {
	n.incarnationGone(p, reason)
}

// closeAll stops the listener and the loops and waits for them.
func (n *Node) closeAll() {
	n.once.Do(func() {
		n.mu.Lock()
		n.closing = true
		n.mu.Unlock()
		close(n.stop)
		_ = n.acc.ln.Close()
		n.wg.Wait()
		for _, p := range n.livePeers() {
			p.mu.Lock()
			links := make([]*link, 0, len(p.links))
			for l := range p.links {
				links = append(links, l)
			}
			p.mu.Unlock()
			for _, l := range links {
				l.close(errLinkClosed)
			}
		}
		n.linkWG.Wait()
		n.dial.log.close()
		n.workers.close() // callworkers.go
		n.each(func(h *Hooks) {
			if h.OnClose != nil {
				h.OnClose()
			}
		})
		close(n.stopped)
	})
	<-n.stopped
}

// Announce publishes meta (short keys and values: services, versions) as
// this node's metadata: through discovery (Consul service meta) and over
// every link (static clusters). Peers see it in Hooks.OnAnnounce and in
// discovery member events; a peer that links later gets it on link-up.
// Meta replaces what was announced before; the map must not be modified
// afterwards.
func (n *Node) Announce(ctx context.Context, meta map[string]string) error {
	n.mu.Lock()
	n.meta = meta
	n.mu.Unlock()
	err := n.disc.Update(ctx, n.self())
	for _, p := range n.livePeers() {
		if l := p.anyLink(); l != nil {
			l.announce()
		}
	}
	if err != nil {
		return fmt.Errorf("remote: announce to discovery: %w", err)
	}
	return nil
}

// AnnounceKeys is Announce of this node's metadata with keys merged in:
// each key is set to its value, a key with an empty value is removed,
// and every other key keeps what was announced before. A layer that owns
// a few keys (the cluster's "cluster_kinds") uses it so as not to erase
// what another layer announced.
func (n *Node) AnnounceKeys(ctx context.Context, keys map[string]string) error {
	n.mu.Lock()
	meta := make(map[string]string, len(n.meta)+len(keys))
	for k, v := range n.meta {
		meta[k] = v
	}
	for k, v := range keys {
		if v == "" {
			delete(meta, k)
		} else {
			meta[k] = v
		}
	}
	n.mu.Unlock()
	return n.Announce(ctx, meta)
}

// announce sends this node's draining flag and metadata on l.
func (l *link) announce() {
	n := l.node
	n.mu.Lock()
	meta, draining := n.meta, n.draining
	n.mu.Unlock()
	if meta == nil && !draining {
		return
	}
	_, _ = l.enqueueEl(&wire.Element{Kind: wire.KindControl, Control: &wire.Control{Op: wire.CtlAnnounce, Draining: draining, Meta: meta}}, false, nil)
}
