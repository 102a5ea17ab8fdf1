package remote

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
)

// errPathClosed: the pool a message was routed to has been torn down; the
// caller falls back to the native path.
var errPathClosed = errors.New("remote: pool closed")

// Outgoing is one message on its way through a proxy pool, already
// encoded as a batch entry. Proxy actors receive *Outgoing values and hand
// them, in batches, to their PoolLink.
type Outgoing struct {
	node  string
	pool  *Pool
	held  held // its bytes in its proxy's budget
	entry []byte
	call  *pendingCall // calls and requests: marked sent before the write
	inc   uint64       // the peer incarnation it is meant for
	reply bool
}

// Node is the peer node the message is for.
func (o *Outgoing) Node() string { return o.node }

// IsCall reports whether it is a call or request, which its pool's
// teardown answers (the others become dead letters if dropped).
func (o *Outgoing) IsCall() bool { return o.call != nil }

// Release gives its bytes back to its proxy's budget: the proxy calls it
// once the message has left (written, dropped or rerouted). Idempotent.
func (o *Outgoing) Release() { o.held.release() }

// IsReply reports whether it is a reply to a call from the peer.
func (o *Outgoing) IsReply() bool { return o.reply }

// Reroute sends a reply its proxy could not write on any live link to the
// caller's incarnation (every link of a peer carries replies), so a pool
// that died under it never leaves the caller waiting. False for anything
// but a reply, or when no link is left (counted as a dropped reply).
func (o *Outgoing) Reroute() bool {
	if !o.reply || o.pool == nil || len(o.entry) < 5 {
		return false
	}
	p := o.pool.peer
	l := p.replyLink()
	if l == nil {
		o.pool.n.stats.repliesDropped.Add(1)
		return false
	}
	// A batch entry is kind, u32 length, body; a frame is u32 length of
	// kind+body, kind, body.
	body := o.entry[5:]
	frame := make([]byte, frameHeader+1+len(body))
	putU32(frame, uint32(len(body)+1))
	frame[frameHeader] = o.entry[0]
	copy(frame[frameHeader+1:], body)
	if _, err := l.enqueue(frame, 1, true, nil); err != nil {
		o.pool.n.stats.repliesDropped.Add(1)
		return false
	}
	o.pool.n.stats.repliesNative.Add(1)
	return true
}

// Pool is a published proxy pool toward one peer incarnation: one proxy
// actor per worker of the peer's receiver pool. While it is published,
// sends, casts, calls and requests to that node go through it, sharded by
// the caller's identity; replies go through it only if it belongs to the
// caller's incarnation (the incarnation guard).
type Pool struct {
	n       *Node
	node    string
	inc     uint64
	peer    *peer
	ends    ends
	proxies []actor.PID
	budgets []*budget // per proxy, nil when unbounded in bytes
	block   bool      // a full budget makes senders wait (else ErrOverloaded)
	closed  atomic.Bool
	stats   *PoolStats
}

// PoolOptions bound a published pool.
type PoolOptions struct {
	// QueueBytes bounds the encoded bytes waiting in each proxy; 0 is
	// unbounded. A single message larger than it still goes through an
	// empty queue.
	QueueBytes int
	// FailFast makes a full proxy refuse with actor.ErrOverloaded instead
	// of making the sender wait.
	FailFast bool
}

// Node is the peer node's name; Incarnation the incarnation it serves.
func (pl *Pool) Node() string        { return pl.node }
func (pl *Pool) Incarnation() uint64 { return pl.inc }

// QueuedBytes is what waits in the pool's proxies now (bounded pools).
func (pl *Pool) QueuedBytes() int64 {
	var n int64
	for _, b := range pl.budgets {
		n += b.bytes()
	}
	return n
}

// Proxies are the proxy actors, by worker index.
func (pl *Pool) Proxies() []actor.PID { return append([]actor.PID(nil), pl.proxies...) }

// Closed reports whether the pool has been unpublished.
func (pl *Pool) Closed() bool { return pl.closed.Load() }

// PoolStats are the pooled-path counters for one peer node, summed over
// every pool built toward it.
type PoolStats struct {
	Batches         atomic.Uint64 // batch frames written
	Messages        atomic.Uint64 // entries written
	Bytes           atomic.Uint64 // bytes written
	Replies         atomic.Uint64 // replies that went through the pool
	GuardViolations atomic.Uint64 // entries for another incarnation (must stay 0)
	// Hist counts batches by size: bucket i holds sizes in (2^(i-1), 2^i],
	// bucket 0 size 1, the last bucket everything above 2^(len-2).
	Hist [12]atomic.Uint64
}

func (s *PoolStats) observe(entries, bytes int) {
	s.Batches.Add(1)
	s.Messages.Add(uint64(entries))
	s.Bytes.Add(uint64(bytes))
	b := 0
	if entries > 1 {
		b = bits.Len(uint(entries - 1))
	}
	if b >= len(s.Hist) {
		b = len(s.Hist) - 1
	}
	s.Hist[b].Add(1)
}

// MeanBatch is messages per batch.
func (s *PoolStats) MeanBatch() float64 {
	b := s.Batches.Load()
	if b == 0 {
		return 0
	}
	return float64(s.Messages.Load()) / float64(b)
}

// PoolStatsFor returns the pooled-path counters for node (created on
// first use; they survive pool rebuilds).
func (n *Node) PoolStatsFor(node string) *PoolStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.poolStats == nil {
		n.poolStats = make(map[string]*PoolStats)
	}
	s := n.poolStats[node]
	if s == nil {
		s = &PoolStats{}
		n.poolStats[node] = s
	}
	return s
}

// Publish makes proxies the pool for node's incarnation inc. It fails if
// inc is not node's current incarnation. A pool published earlier for
// node is unpublished.
func (n *Node) Publish(node string, inc uint64, proxies []actor.PID, opts PoolOptions) (*Pool, error) {
	if len(proxies) == 0 {
		return nil, fmt.Errorf("remote: publish pool for %s: no proxies", node)
	}
	stats := n.PoolStatsFor(node)
	n.mu.Lock()
	s := n.slots[node]
	if s == nil || s.cur == nil || s.cur.inc != inc || n.closing {
		n.mu.Unlock()
		return nil, fmt.Errorf("remote: publish pool for %s: incarnation %016x is not current", node, inc)
	}
	p := s.cur
	pool := &Pool{
		n: n, node: node, inc: inc, peer: p, stats: stats,
		ends:    ends{selfNode: n.sys.Name(), selfInc: n.sys.Incarnation(), peerNode: node, peerInc: inc},
		proxies: append([]actor.PID(nil), proxies...),
		block:   !opts.FailFast,
	}
	if opts.QueueBytes > 0 {
		for range proxies {
			pool.budgets = append(pool.budgets, newBudget(opts.QueueBytes))
		}
	}
	n.mu.Unlock()
	// No native send may come between the route change and the fence.
	p.pathMu.Lock()
	n.mu.Lock()
	if s.cur != p || n.closing {
		n.mu.Unlock()
		p.pathMu.Unlock()
		return nil, fmt.Errorf("remote: publish pool for %s: incarnation %016x is not current", node, inc)
	}
	old := n.swapRoute(node, pool)
	n.mu.Unlock()
	p.raiseFence()
	p.pathMu.Unlock()
	if old != nil {
		n.closePool(old, errors.New("replaced by a new pool"))
	}
	return pool, nil
}

// Unpublish removes pool from routing (if it is still published) and
// fails the calls that went through it: still queued in a proxy,
// ErrNotSent; written, ErrNodeDown.
func (n *Node) Unpublish(pool *Pool, reason error) {
	n.mu.Lock()
	if n.route(pool.node) == pool {
		n.swapRoute(pool.node, nil)
	}
	n.mu.Unlock()
	n.closePool(pool, reason)
}

func (n *Node) closePool(pool *Pool, reason error) {
	if !pool.closed.CompareAndSwap(false, true) {
		return
	}
	for _, b := range pool.budgets {
		b.close() // senders waiting for room fall back to the native path
	}
	failed := pool.peer.failVia(pool, fmt.Errorf("pool to %s torn down: %v", pool.node, reason))
	n.stats.failedByLiveness.Add(uint64(failed))
}

// swapRoute replaces node's route; under n.mu. Readers never lock.
func (n *Node) swapRoute(node string, pool *Pool) (old *Pool) {
	cur := n.routes.Load()
	next := make(map[string]*Pool, len(*cur)+1)
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
func (n *Node) route(node string) *Pool {
	pool := (*n.routes.Load())[node]
	if pool == nil || pool.closed.Load() {
		return nil
	}
	return pool
}

// Route is the pool currently published for node, or nil.
func (n *Node) Route(node string) *Pool { return n.route(node) }

// shard is the proxy for key: a sender's identity, so that one sender
// keeps one proxy and its order.
func (pl *Pool) shard(key uint64) int { return int(mix(key) % uint64(len(pl.proxies))) }

// callShard is the proxy for a call or request with id from sender. The
// root handle (the zero sender: System.Call, Request, RequestNamed from
// plain goroutines) needs no order between its blocking calls, so they
// take the proxies in turn by call id; any other sender keeps its proxy.
func (pl *Pool) callShard(sender actor.PID, id uint64) int {
	if sender.IsZero() {
		return int(id % uint64(len(pl.proxies)))
	}
	return pl.shard(senderKey(sender))
}

// enqueue encodes el and hands it to proxy i (see shard and callShard).
// force ignores the proxy's mailbox bound (replies).
func (pl *Pool) enqueue(i int, el *Element, pc *pendingCall, force bool) error {
	if pl.closed.Load() {
		return errPathClosed
	}
	out := &Outgoing{node: pl.node, pool: pl, call: pc, inc: pl.inc, reply: el.Kind == KindReply}
	s := getBuf()
	b, err := pl.ends.encodeElement(s.b[:0], el)
	s.b = b
	if err != nil {
		putBuf(s)
		return err
	}
	if len(b)+16 > pl.n.cfg.MaxFrameSize {
		putBuf(s)
		return fmt.Errorf("%w: %s of %d bytes exceeds MaxFrameSize %d", actor.ErrBadMessage, el.Kind, len(b), pl.n.cfg.MaxFrameSize)
	}
	out.entry = append([]byte(nil), b...)
	putBuf(s)
	proxy := pl.proxies[i]
	if pl.budgets != nil {
		b := pl.budgets[i]
		if err := b.acquire(len(out.entry), pl.block, force); err != nil {
			return err
		}
		out.held = held{b: b, n: len(out.entry)}
	}
	if force {
		err = pl.n.sys.Inject(proxy, out)
	} else {
		err = pl.n.sys.DeliverLocal(nil, actor.PID{}, proxy, out, nil)
	}
	if err != nil {
		out.Release()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, actor.ErrNoProcess):
		return errPathClosed
	case errors.Is(err, actor.ErrMailboxFull):
		return actor.ErrOverloaded
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
