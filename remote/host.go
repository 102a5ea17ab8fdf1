package remote

import (
	"context"
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/hooks"
	"github.com/mailroom-go/mailroom/internal/poolpath"
)

// host is the Node as the pooled path sees it (poolpath.Host): a type of
// its own so that its methods stay out of the Node's API. The pool
// publication is its (pool.go): the routes by node, the pools published
// and torn down in them, and the pooled-path counters by node, which
// outlive a peer's incarnations. proxypool gets it through
// hooks.PoolHost.
type host Node

func init() {
	hooks.PoolHost = func(n *Node) poolpath.Host { return (*host)(n) }
}

func (h *host) node() *Node { return (*Node)(h) }

func (h *host) DialPool(ctx context.Context, node string, inc uint64, worker int) (poolpath.Link, error) {
	pl, err := h.node().dial.pool(ctx, node, inc, worker)
	if err != nil {
		return nil, err // never a typed nil
	}
	return pl, nil
}

func (h *host) Publish(node string, inc uint64, proxies []actor.PID, opts poolpath.Options) (poolpath.Pool, error) {
	links := make([]*poolLink, len(opts.Links))
	for i, l := range opts.Links {
		pl, ok := l.(*poolLink)
		if !ok || pl.n != h.node() {
			return nil, fmt.Errorf("remote: publish pool for %s: link %d was not dialed by this node", node, i)
		}
		links[i] = pl
	}
	pool, err := h.publishPool(node, inc, proxies, poolOptions{
		Links: links, QueueEntries: opts.QueueEntries, QueueBytes: opts.QueueBytes,
		BatchSize: opts.BatchSize, FailFast: opts.FailFast, Dropped: opts.Dropped,
	})
	if err != nil {
		return nil, err
	}
	return pool, nil
}

func (h *host) Unpublish(pool poolpath.Pool, reason error) {
	if p, ok := pool.(*pubPool); ok && p != nil && p.n == h.node() {
		h.unpublishPool(p, reason)
	}
}

func (h *host) Route(node string) poolpath.Pool {
	if p := h.route(node); p != nil {
		return p
	}
	return nil
}

func (h *host) Stats(node string) *poolpath.Stats { return h.poolStatsFor(node) }
