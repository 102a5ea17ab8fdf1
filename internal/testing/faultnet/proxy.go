package faultnet

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Dir is a direction through the proxy.
type Dir int

const (
	// Up: from the side that dialed the proxy to the upstream.
	Up Dir = 1 << iota
	// Down: from the upstream back to the dialing side.
	Down
	// Both directions.
	Both = Up | Down
)

// Stats are a proxy's counters since it started.
type Stats struct {
	Accepted  uint64 // connections accepted
	Dialed    uint64 // upstream connections made
	Resets    uint64 // connections reset by Reset
	BytesUp   uint64 // read from the dialing sides
	BytesDown uint64 // read from the upstreams
	Held      uint64 // read and not forwarded yet (either direction)
	Open      int    // connection pairs open now
}

// Proxy forwards every connection made to Addr to its upstream address,
// applying the faults in effect. It is safe for concurrent use.
type Proxy struct {
	ln       net.Listener
	upstream string
	done     chan struct{}
	wg       sync.WaitGroup // the accept loop and every pair's goroutines

	mu      sync.Mutex // protects following
	hole    [2]bool
	delay   [2]time.Duration
	changed chan struct{} // closed and replaced on every change
	pairs   map[*pair]struct{}
	closed  bool

	accepted, dialed, resets, bytesUp, bytesDown, forwarded atomic.Uint64
}

// Listen starts a proxy on a free loopback port that forwards to upstream.
func Listen(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: upstream, done: make(chan struct{}), changed: make(chan struct{}), pairs: map[*pair]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address to dial instead of the upstream.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Blackhole stops forwarding in dir until Heal (or Pass) for it.
func (p *Proxy) Blackhole(dir Dir) { p.set(dir, true, -1) }

// Pass resumes forwarding in dir; what was held is delivered in order.
func (p *Proxy) Pass(dir Dir) { p.set(dir, false, -1) }

// Heal resumes both directions and removes every delay.
func (p *Proxy) Heal() { p.set(Both, false, 0) }

// Delay holds every chunk in dir for d before forwarding it (0 removes).
func (p *Proxy) Delay(dir Dir, d time.Duration) {
	p.mu.Lock()
	hole := p.hole
	p.mu.Unlock()
	for i, x := range []Dir{Up, Down} {
		if dir&x != 0 {
			p.set(x, hole[i], d)
		}
	}
}

// set changes the faults of dir; delay < 0 leaves delays alone.
func (p *Proxy) set(dir Dir, hole bool, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range []Dir{Up, Down} {
		if dir&x == 0 {
			continue
		}
		p.hole[i] = hole
		if delay >= 0 {
			p.delay[i] = delay
		}
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// Reset closes every open connection with an RST on both sides.
func (p *Proxy) Reset() int {
	p.mu.Lock()
	pairs := make([]*pair, 0, len(p.pairs))
	for pr := range p.pairs {
		pairs = append(pairs, pr)
	}
	p.mu.Unlock()
	for _, pr := range pairs {
		pr.reset()
	}
	p.resets.Add(uint64(len(pairs)))
	return len(pairs)
}

// Stats returns the counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	open := len(p.pairs)
	p.mu.Unlock()
	st := Stats{Accepted: p.accepted.Load(), Dialed: p.dialed.Load(), Resets: p.resets.Load(),
		BytesUp: p.bytesUp.Load(), BytesDown: p.bytesDown.Load(), Open: open}
	if in, out := st.BytesUp+st.BytesDown, p.forwarded.Load(); in > out {
		st.Held = in - out
	}
	return st
}

// Close stops accepting, resets every connection and waits for every
// goroutine of the proxy. Idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	err := p.ln.Close()
	p.Reset()
	p.wg.Wait()
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.accepted.Add(1)
		pr := &pair{p: p, client: c, ended: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.pairs[pr] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go pr.run()
	}
}

// wait blocks while dir is blackholed, then until at+delay; false when
// the proxy or the pair closed meanwhile.
func (p *Proxy) wait(dir Dir, at time.Time, stop <-chan struct{}) bool {
	i := 0
	if dir == Down {
		i = 1
	}
	for {
		p.mu.Lock()
		hole, delay, changed := p.hole[i], p.delay[i], p.changed
		p.mu.Unlock()
		if hole {
			select {
			case <-changed:
				continue
			case <-stop:
				return false
			case <-p.done:
				return false
			}
		}
		if d := time.Until(at.Add(delay)); delay > 0 && d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-changed:
				t.Stop()
				continue // the fault changed: look again
			case <-stop:
				t.Stop()
				return false
			case <-p.done:
				t.Stop()
				return false
			}
		}
		return true
	}
}

func (p *Proxy) forget(pr *pair) {
	p.mu.Lock()
	delete(p.pairs, pr)
	p.mu.Unlock()
}
