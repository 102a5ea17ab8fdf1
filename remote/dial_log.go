package remote

import (
	"log/slog"
	"sync"
	"time"
)

// dialLogEvery is how often a peer's repeated dial failures are reported.
const dialLogEvery = 5 * time.Second

// dialLog reports failed dials without one line per call: the first
// failure toward a peer is logged at once; the ones after it within
// dialLogEvery are counted and reported in one line when the interval
// ends ("dial failed again", with the count and the last error), and so
// on while they go on. A peer with no failure in an interval is
// forgotten, so its next failure is logged at once again.
type dialLog struct {
	log   *slog.Logger
	every time.Duration

	mu     sync.Mutex // protects following
	peers  map[string]*dialFailures
	closed bool
}

// dialFailures are one peer's failures since its last line.
type dialFailures struct {
	count int
	addr  string
	last  error
	timer *time.Timer
}

func newDialLog(log *slog.Logger, every time.Duration) *dialLog {
	return &dialLog{log: log, every: every, peers: map[string]*dialFailures{}}
}

// failed records a failed dial of peer at addr.
func (d *dialLog) failed(peer, addr string, err error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	if f := d.peers[peer]; f != nil {
		f.count++
		f.addr, f.last = addr, err
		d.mu.Unlock()
		return
	}
	f := &dialFailures{}
	f.timer = time.AfterFunc(d.every, func() { d.flush(peer, f) })
	d.peers[peer] = f
	d.mu.Unlock()
	d.log.Warn("dial failed", "peer", peer, "addr", addr, "err", err)
}

// flush reports what f counted, and keeps counting for another interval
// if there was anything; otherwise it forgets the peer.
func (d *dialLog) flush(peer string, f *dialFailures) {
	d.mu.Lock()
	if d.peers[peer] != f {
		d.mu.Unlock()
		return
	}
	count, addr, last := f.count, f.addr, f.last
	if count == 0 || d.closed {
		delete(d.peers, peer)
	} else {
		f.count = 0
		f.timer.Reset(d.every)
	}
	d.mu.Unlock()
	if count > 0 {
		d.log.Warn("dial failed again", "peer", peer, "addr", addr, "times", count, "within", d.every, "err", last)
	}
}

// close stops the timers and reports what is still counted.
func (d *dialLog) close() {
	d.mu.Lock()
	d.closed = true
	peers := d.peers
	d.peers = map[string]*dialFailures{}
	d.mu.Unlock()
	for peer, f := range peers {
		f.timer.Stop()
		if f.count > 0 {
			d.log.Warn("dial failed again", "peer", peer, "addr", f.addr, "times", f.count, "within", d.every, "err", f.last)
		}
	}
}
