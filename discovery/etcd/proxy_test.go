package etcd

import (
	"net"
	"sync"
	"testing"
)

// proxy forwards TCP connections to a target (etcd) so that a test can
// disrupt one node's link to etcd for real: stall holds every byte in
// both directions, cut closes every connection (the client redials at
// once, through the proxy, which forwards again).
type proxy struct {
	t      testing.TB
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu      sync.Mutex // protects following
	conns   map[net.Conn]bool
	stalled chan struct{} // non-nil while stalled; closed to let bytes flow
	closed  bool
}

func newProxy(t testing.TB, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &proxy{t: t, target: target, ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// URL is the URL clients use instead of the target's.
func (p *proxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			u.Close()
			return
		}
		p.conns[c], p.conns[u] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

// pipe copies from src to dst, holding each chunk while stalled.
func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.stalled
			p.mu.Unlock()
			if gate != nil {
				<-gate
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or a closed connection
			return
		}
	}
}

// stall holds every byte from now on, until unstall.
func (p *proxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled == nil {
		p.stalled = make(chan struct{})
	}
}

// cutAndResume closes every connection (dropping what was held) and lets
// new ones flow.
func (p *proxy) cutAndResume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.cutAndResume()
	p.wg.Wait()
}
