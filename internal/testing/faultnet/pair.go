package faultnet

import (
	"net"
	"sync"
	"time"
)

// pair is one client connection and its upstream connection, with one
// pump per direction.
type pair struct {
	p      *Proxy
	client net.Conn
	ended  chan struct{} // closed by reset: every pump stops at once

	mu       sync.Mutex // protects following
	upstream net.Conn
	isReset  bool
}

// chunk is bytes read at a time, waiting to be forwarded.
type chunk struct {
	b  []byte
	at time.Time
}

func (pr *pair) run() {
	defer pr.p.wg.Done()
	defer pr.p.forget(pr)
	// The client's bytes, read while the upstream is not dialed yet.
	up := make(chan chunk, 16)
	upEOF := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		pr.read(pr.client, up, upEOF, &pr.p.bytesUp)
	}()
	// Dial only once Up passes: a blackholed SYN never arrives. A client
	// that gave up meanwhile is never dialed for.
	if !pr.p.wait(Up, time.Time{}, pr.ended) || pr.gaveUp(upEOF) {
		pr.reset()
		readers.Wait()
		return
	}
	u, err := net.Dial("tcp", pr.p.upstream)
	if err != nil {
		pr.reset()
		readers.Wait()
		return
	}
	pr.p.dialed.Add(1)
	pr.mu.Lock()
	pr.upstream = u
	reset := pr.isReset
	pr.mu.Unlock()
	if reset {
		u.Close()
		readers.Wait()
		return
	}
	down := make(chan chunk, 16)
	readers.Add(1)
	go func() {
		defer readers.Done()
		pr.read(u, down, nil, &pr.p.bytesDown)
	}()
	var writers sync.WaitGroup
	writers.Add(1)
	go func() {
		defer writers.Done()
		pr.write(Down, down, pr.client)
	}()
	pr.write(Up, up, u)
	writers.Wait()
	pr.client.Close()
	u.Close()
	readers.Wait()
}

// gaveUp reports whether the client has closed: what it sent is stale.
func (pr *pair) gaveUp(eof chan struct{}) bool {
	select {
	case <-eof:
		return true
	default:
		return false
	}
}

// read copies src into ch until EOF or an error, then closes ch.
func (pr *pair) read(src net.Conn, ch chan<- chunk, eof chan struct{}, bytes interface{ Add(uint64) uint64 }) {
	defer close(ch)
	if eof != nil {
		defer close(eof)
	}
	for {
		buf := make([]byte, 32<<10)
		n, err := src.Read(buf)
		if n > 0 {
			bytes.Add(uint64(n)) // before it can be forwarded
			select {
			case ch <- chunk{b: buf[:n], at: time.Now()}:
			case <-pr.ended:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// write forwards ch to dst as the faults of dir allow, then passes the
// close on (a FIN). A write error resets the pair.
func (pr *pair) write(dir Dir, ch <-chan chunk, dst net.Conn) {
	for c := range ch {
		if !pr.p.wait(dir, c.at, pr.ended) {
			return
		}
		n, err := dst.Write(c.b)
		pr.p.forwarded.Add(uint64(n))
		if err != nil {
			pr.reset()
			return
		}
	}
	if !pr.p.wait(dir, time.Time{}, pr.ended) {
		return
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		_ = dst.Close()
	}
}

// reset closes both connections with an RST. Idempotent.
func (pr *pair) reset() {
	pr.mu.Lock()
	if pr.isReset {
		pr.mu.Unlock()
		return
	}
	pr.isReset = true
	u := pr.upstream
	close(pr.ended)
	pr.mu.Unlock()
	for _, c := range []net.Conn{pr.client, u} {
		if c == nil {
			continue
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	}
}
