package remote

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/poolpath"
	"github.com/mailroom-go/mailroom/internal/wire"
)

// errPathClosed: the pool a message was routed to has been torn down; the
// caller falls back to the native path.
var errPathClosed = errors.New("remote: pool closed")

// outgoing is a message a proxy pool dropped, when the pool was
// published without Dropped (remote's own tests): the dead letter's
// Message when a send or cast queued in a proxy is never written (its
// link closed, its proxy ended). Its payload is gone with its batch.
// proxypool publishes its own (proxypool.Outgoing).
type outgoing struct {
	node string
	kind wire.Kind
}

// Node is the peer node the message was for.
func (o *outgoing) Node() string { return o.node }

// Op is what it was: "send" or "cast".
func (o *outgoing) Op() string {
	if o.kind == wire.KindCast {
		return "cast"
	}
	return "send"
}

// pubPool is a published proxy pool toward one peer incarnation: one proxy
// actor per worker of the peer's receiver pool. While it is published,
// sends, casts, calls and requests to that node go through it, sharded by
// the caller's identity; replies go through it only if it belongs to the
// caller's incarnation (the incarnation guard).
type pubPool struct {
	n       *Node
	node    string
	inc     uint64
	peer    *peer
	ends    wire.Ends
	proxies []actor.PID
	links   []*poolLink // by proxy: each proxy drains its link's queue
	closed  atomic.Bool
	stats   *poolStats
	dropped func(op string, reason error) // poolOptions.Dropped
	// fence is closed when the native path has delivered what it carried
	// before the pool was published (barrier.go): its links write nothing
	// before. Set before the pool is routed.
	fence <-chan struct{}
}

// poolOptions describe a published pool's proxies and bound their queues.
type poolOptions struct {
	// Links are the proxies' pool links, in the order of the proxies:
	// messages sharded to proxy i are queued on Links[i], which proxy i
	// drains (PoolLink.OnQueued, Flush). Required. When the pool is
	// unpublished while its peer lives, they are fenced: the native path
	// delivers nothing that follows before the peer has read everything
	// they carried; their owners end them with PoolLink.Finish.
	Links []*poolLink
	// QueueEntries bounds the messages waiting in each proxy (queued or
	// being written); 0 is unbounded.
	QueueEntries int
	// QueueBytes bounds the encoded bytes waiting in each proxy; 0 is
	// unbounded. A single message larger than it still goes through an
	// empty queue.
	QueueBytes int
	// BatchSize caps the messages in one batch frame; 0 is no cap but
	// MaxFrameSize.
	BatchSize int
	// FailFast makes a full proxy refuse with actor.ErrOverloaded instead
	// of making the sender wait.
	FailFast bool
	// Dropped is given each send or cast a link's queue dropped
	// (poolpath.Options.Dropped); nil: an outgoing dead letter.
	Dropped func(op string, reason error)
}

// Node is the peer node's name; Incarnation the incarnation it serves.
func (pl *pubPool) Node() string        { return pl.node }
func (pl *pubPool) Incarnation() uint64 { return pl.inc }

// QueuedBytes is the encoded bytes waiting in the pool's proxies now,
// the batches being written included.
func (pl *pubPool) QueuedBytes() int64 {
	var n int64
	for _, l := range pl.links {
		_, b := l.q.depth()
		n += b
	}
	return n
}

// QueueDepth is the messages waiting in the pool's proxies now (queued,
// not yet taken for a write).
func (pl *pubPool) QueueDepth() int {
	n := 0
	for _, l := range pl.links {
		n += l.QueueLen()
	}
	return n
}

// Proxies are the proxy actors, by worker index.
func (pl *pubPool) Proxies() []actor.PID { return append([]actor.PID(nil), pl.proxies...) }

// Closed reports whether the pool has been unpublished.
func (pl *pubPool) Closed() bool { return pl.closed.Load() }

// poolStats are the pooled-path counters for one peer node, summed over
// every pool built toward it (proxypool reads them through the host).
type poolStats = poolpath.Stats

// poolStatsFor returns the pooled-path counters for node (created on
// first use; they survive pool rebuilds).
func (n *host) poolStatsFor(node string) *poolStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.poolStats == nil {
		n.poolStats = make(map[string]*poolStats)
	}
	s := n.poolStats[node]
	if s == nil {
		s = &poolStats{}
		n.poolStats[node] = s
	}
	return s
}

// publishPool makes proxies the pool for node's incarnation inc. It fails if
// inc is not node's current incarnation. A pool published earlier for
// node is unpublished.
func (n *host) publishPool(node string, inc uint64, proxies []actor.PID, opts poolOptions) (*pubPool, error) {
	if len(proxies) == 0 || len(opts.Links) != len(proxies) {
		return nil, fmt.Errorf("remote: publish pool for %s: %d proxies, %d links: want as many, at least one", node, len(proxies), len(opts.Links))
	}
	stats := n.poolStatsFor(node)
	n.mu.Lock()
	s := n.slots[node]
	if s == nil || s.cur == nil || s.cur.inc != inc || n.closing {
		n.mu.Unlock()
		return nil, fmt.Errorf("remote: publish pool for %s: incarnation %016x is not current", node, inc)
	}
	p := s.cur
	pool := &pubPool{
		n: (*Node)(n), node: node, inc: inc, peer: p, stats: stats, dropped: opts.Dropped,
		ends:    wire.Ends{SelfNode: n.sys.Name(), SelfInc: n.sys.Incarnation(), PeerNode: node, PeerInc: inc, MaxMsg: n.cfg.Limits.MaxMessageSize},
		proxies: append([]actor.PID(nil), proxies...),
		links:   append([]*poolLink(nil), opts.Links...),
	}
	n.mu.Unlock()
	for _, l := range pool.links {
		if l.l.peer != p {
			// The incarnation guard: a pool's links all reach the
			// incarnation its entries are encoded for.
			stats.GuardViolations.Add(1)
			return nil, fmt.Errorf("remote: publish pool for %s: a link reaches incarnation %016x, not %016x", node, l.Incarnation(), inc)
		}
		l.q.mu.Lock()
		l.q.opts.entries, l.q.opts.bytes = opts.QueueEntries, int64(opts.QueueBytes)
		l.q.opts.batch, l.q.opts.failFast = opts.BatchSize, opts.FailFast
		l.q.mu.Unlock()
	}
	// No native send may come between the fence and the route change.
	// What closing a link too full for a fence or the barrier leaves to
	// do runs after the path lock (fx): a dead-letter subscriber or a
	// hook may send to p, natively.
	var fx effects
	p.pathMu.Lock()
	n.mu.Lock()
	if s.cur != p || n.closing {
		n.mu.Unlock()
		p.pathMu.Unlock()
		return nil, fmt.Errorf("remote: publish pool for %s: incarnation %016x is not current", node, inc)
	}
	n.mu.Unlock()
	// A pool it replaces is unpublished as Unpublish does: its links are
	// fenced in this same step (its peer is p, alive), so that nothing
	// the new pool or the native path carries overtakes what they hold.
	if old := (*n.routes.Load())[node]; old != nil && old.peer == p {
		p.fenceLinks(old.linkList(), &fx)
	}
	// The fence is raised, and given to the pool, before the route
	// changes: a proxy woken by the first push always finds it.
	pool.fence = p.publishFence(&fx)
	for _, l := range pool.links {
		l.pool.Store(pool)
	}
	n.mu.Lock()
	old := n.swapRoute(node, pool)
	n.mu.Unlock()
	if n.afterPublishSwap != nil {
		n.afterPublishSwap()
	}
	p.pathMu.Unlock()
	fx.run()
	if old != nil {
		n.closePool(old, errors.New("replaced by a new pool"))
	}
	return pool, nil
}

// linkList is the pool's links.
func (pl *pubPool) linkList() []*link {
	links := make([]*link, len(pl.links))
	for i, l := range pl.links {
		links[i] = l.l
	}
	return links
}

// unpublishPool removes pool from routing (if it is still published) and
// fails the calls that went through it: still queued in a proxy,
// ErrNotSent; written, ErrNodeDown. When its peer incarnation lives, the
// pool's links are fenced in the same step (supersede.go): whatever a
// sender sends natively from now on is delivered after what the pool's
// links carried, as when a pool takes over from the native path.
func (n *host) unpublishPool(pool *pubPool, reason error) {
	p := pool.peer
	var fx effects // closing a link too full for the fence: after the path lock
	live := !p.isGone()
	if live {
		p.pathMu.Lock() // no native send between the route change and the fence
	}
	n.mu.Lock()
	if n.route(pool.node) == pool {
		n.swapRoute(pool.node, nil)
	}
	n.mu.Unlock()
	p.nativeNoted.Store(0) // the next native message is news (hooks.go)
	if live {
		p.fenceLinks(pool.linkList(), &fx)
		p.pathMu.Unlock()
	}
	fx.run()
	n.closePool(pool, reason)
}

func (n *host) closePool(pool *pubPool, reason error) {
	if !pool.closed.CompareAndSwap(false, true) {
		return
	}
	for _, l := range pool.links {
		l.q.close() // senders waiting for room fall back to the native path
	}
	failed := pool.peer.failVia(pool, fmt.Errorf("pool to %s torn down: %v", pool.node, reason))
	n.stats.failedByLiveness.Add(uint64(failed))
}

// swapRoute replaces node's route; under n.mu. Readers never lock.
func (n *host) swapRoute(node string, pool *pubPool) (old *pubPool) {
	cur := n.routes.Load()
	next := make(map[string]*pubPool, len(*cur)+1)
	for k, v := range *cur {
		next[k] = v
	}
	old = next[node]
	if pool == nil {
		delete(next, node)
	} else {
		next[node] = pool
	}
	n.routes.Store(&next)
	return old
}

// route returns the published pool for node, or nil (native path).
func (n *host) route(node string) *pubPool {
	pool := (*n.routes.Load())[node]
	if pool == nil || pool.closed.Load() {
		return nil
	}
	return pool
}

// sweepPools trims the recycled buffers of the proxy queues that stayed
// idle since the last sweep.
func (n *host) sweepPools() {
	for _, pool := range *n.routes.Load() {
		for _, l := range pool.links {
			l.q.sweep()
		}
	}
}

// shard is the proxy for key: a sender's identity, so that one sender
// keeps one proxy and its order.
func (pl *pubPool) shard(key uint64) int { return int(mix(key) % uint64(len(pl.proxies))) }

// callShard is the proxy for a call or request with id from the sender
// whose shard key is key. The root handle (root: the zero sender:
// System.Call, Request, RequestNamed from plain goroutines) needs no
// order between its blocking calls, so they take the proxies in turn by
// call id; any other sender keeps its proxy.
func (pl *pubPool) callShard(root bool, key, id uint64) int {
	if root {
		return int(id % uint64(len(pl.proxies)))
	}
	return pl.shard(key)
}

// How a push may write (ownWrite): a call or a reply that finds its
// proxy idle can be written by its own goroutine, which waits for the
// other side anyway, instead of waking the proxy's.
type ownWrite uint8

const (
	ownNever ownWrite = iota // the proxy writes (sends, casts, and what must not wait in a write)
	ownCrowd                 // may write, after letting the goroutines already runnable join
	ownAlone                 // may write at once: nothing else is on its way (a lone caller)
)

// enqueue encodes el and queues it on proxy i (see shard and callShard).
// force ignores the queue's bounds (replies). t, for a reply, is the
// admission ticket of the call it answers (admission.go): given back
// once the batch holding the reply is written or dropped. own says
// whether this goroutine may write the proxy's turn itself when the
// proxy is idle (PoolLink.flushOwned).
func (pl *pubPool) enqueue(i int, el *wire.Element, pc *pendingCall, force bool, t *ticket, own ownWrite) error {
	if pl.closed.Load() {
		return errPathClosed
	}
	s := getBuf()
	b, err := pl.ends.EncodeElement(s.b[:0], el)
	s.b = b
	if err != nil {
		putBuf(s)
		return err
	}
	link := pl.links[i]
	q := &link.q
	if len(b) > q.opts.maxBody {
		putBuf(s)
		return fmt.Errorf("%w: %s of %d bytes exceeds MaxFrameSize %d", actor.ErrBadMessage, el.Kind, len(b), pl.n.cfg.Limits.MaxFrameSize)
	}
	owned, err := q.pushWith(b, pc, force, t, own != ownNever && link.open.Load())
	putBuf(s)
	if owned {
		link.flushOwned(own == ownCrowd)
	}
	return err
}

// senderKey turns a sender's identity into a shard key.
func senderKey(p actor.PID) uint64 { return p.ID ^ p.Incarnation }

// mix is splitmix64's finaliser: adjacent keys land on different proxies.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
