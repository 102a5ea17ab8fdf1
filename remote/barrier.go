package remote

// Ordering across a change of path. A sender's messages to one target
// keep their order along one path (a native link, or one proxy's pool
// link), and a sender moves from the native path to the pool when a pool
// is published. What the native path still holds toward the peer (in its
// buffer, in the kernels, in the peer's reader waiting on a full
// mailbox) must be delivered before anything the pool carries.
//
// The peer handles a link's frames in order and answers a ping with a
// pong only once every frame before the ping was handled (its sends
// delivered into their mailboxes), and never drops a pong. So a ping on
// the native link, sent once no native send can follow it, is a barrier:
// when its pong comes back, the native path has delivered everything.
// Publish sends that ping under the peer's path lock (native sends hold
// it shared and check the route under it), and every link of the pool
// waits for the pong before its first write.

// barrier is a wait for the pong of ping number n on a link.
type barrier struct {
	n  uint64
	ch chan struct{}
}

// ping enqueues a ping and returns its number on the link: pongs come
// back in order, so pong k answers ping k.
func (l *link) ping(block bool) (uint64, error) {
	b := getBuf()
	defer putBuf(b)
	b.b = l.ends.appendFrame(b.b[:0], &Element{Kind: KindPing})
	var n uint64
	_, err := l.enqueueThen(b.b, 1, block, nil, func() {
		l.pings++
		n = l.pings
	})
	return n, err
}

// barrier sends a ping and returns a channel closed when its pong
// arrives, or when the link closes (nothing more comes on it then).
func (l *link) barrier() <-chan struct{} {
	ch := make(chan struct{})
	n, err := l.ping(true)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil || l.closed || l.pongs.Load() >= n {
		close(ch)
		return ch
	}
	l.barriers = append(l.barriers, barrier{n: n, ch: ch})
	return ch
}

// onPong counts a pong and releases the barriers it answers.
func (l *link) onPong() {
	n := l.pongs.Add(1)
	l.mu.Lock()
	l.releaseBarriers(n)
	l.mu.Unlock()
}

// releaseBarriers closes the barriers of pings up to n. Under l.mu.
func (l *link) releaseBarriers(n uint64) {
	keep := l.barriers[:0]
	for _, b := range l.barriers {
		if b.n <= n {
			close(b.ch)
		} else {
			keep = append(keep, b)
		}
	}
	l.barriers = keep
}

// closedChan is a channel that is already closed.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// fence is set by Publish: the pool's links wait for it before their
// first write. Returns the current one.
func (p *peer) fence() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ready == nil {
		return closedChan
	}
	return p.ready
}

// raiseFence makes the pool about to be published wait for the native
// path: a ping on our native link, if there is one. Called with
// p.pathMu held exclusively, after the route changed, so no native send
// can come after the ping.
func (p *peer) raiseFence() {
	var ready <-chan struct{} = closedChan
	if l := p.outLink(); l != nil {
		ready = l.barrier()
	}
	p.mu.Lock()
	p.ready = ready
	p.mu.Unlock()
}
