package remote

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// dialLogEvery is how often a peer's repeated dial failures are reported.
const dialLogEvery = 5 * time.Second

// dialLogDistinct bounds the distinct error texts one "dial failed again"
// line lists; failures with texts beyond them are counted as "other".
const dialLogDistinct = 8

// dialLog reports failed dials without one line per call: the first
// failure toward a peer is logged at once; the ones after it within
// dialLogEvery are counted and reported in one line when the interval
// ends ("dial failed again", with the count, the last error and every
// distinct error with its count, most frequent first), and so
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
	kinds map[string]int // distinct error texts, at most dialLogDistinct
	other int            // failures whose text did not fit in kinds
	timer *time.Timer
}

// note counts err under its text.
func (f *dialFailures) note(err error) {
	text := err.Error()
	if _, ok := f.kinds[text]; ok || len(f.kinds) < dialLogDistinct {
		f.kinds[text]++
	} else {
		f.other++
	}
}

// summary lists the distinct errors with their counts, most frequent
// first, and resets them: `3× "connection refused"; 1× "i/o timeout"`.
func (f *dialFailures) summary() string {
	type kind struct {
		text string
		n    int
	}
	ks := make([]kind, 0, len(f.kinds))
	for text, n := range f.kinds {
		ks = append(ks, kind{text, n})
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].n > ks[j].n || (ks[i].n == ks[j].n && ks[i].text < ks[j].text) })
	parts := make([]string, 0, len(ks)+1)
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%d× %q", k.n, k.text))
	}
	if f.other > 0 {
		parts = append(parts, fmt.Sprintf("%d× other errors", f.other))
	}
	clear(f.kinds)
	f.other = 0
	return strings.Join(parts, "; ")
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
		f.note(err)
		d.mu.Unlock()
		return
	}
	f := &dialFailures{kinds: map[string]int{}}
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
	count, addr, last, errs := f.count, f.addr, f.last, f.summary()
	if count == 0 || d.closed {
		delete(d.peers, peer)
	} else {
		f.count = 0
		f.timer.Reset(d.every)
	}
	d.mu.Unlock()
	if count > 0 {
		d.log.Warn("dial failed again", "peer", peer, "addr", addr, "times", count, "within", d.every, "err", last, "errors", errs)
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
			d.log.Warn("dial failed again", "peer", peer, "addr", f.addr, "times", f.count, "within", d.every, "err", f.last, "errors", f.summary())
		}
	}
}
