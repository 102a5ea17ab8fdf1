package consultest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Kind classifies a request to the agent by what a mailroom node uses it
// for (discovery/consul*.go).
type Kind int

const (
	// KindWatch: GET /v1/health/service/<name>, the membership watch
	// (a blocking query once it carries an index).
	KindWatch Kind = iota
	// KindTTL: PUT /v1/agent/check/update/<id>, a TTL refresh.
	KindTTL
	// KindChecks: GET /v1/agent/checks, reading self's check before a
	// refresh.
	KindChecks
	// KindRegister: PUT /v1/agent/service/register.
	KindRegister
	// KindDeregister: PUT /v1/agent/service/deregister/<id>.
	KindDeregister
	// KindOther: anything else.
	KindOther
	numKinds
)

func (k Kind) String() string {
	switch k {
	case KindWatch:
		return "watch"
	case KindTTL:
		return "ttl"
	case KindChecks:
		return "checks"
	case KindRegister:
		return "register"
	case KindDeregister:
		return "deregister"
	case KindOther:
		return "other"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Classify says what a request to the agent is for.
func Classify(method, path string) Kind {
	switch {
	case method == http.MethodGet && strings.HasPrefix(path, "/v1/health/service/"):
		return KindWatch
	case method == http.MethodPut && strings.HasPrefix(path, "/v1/agent/check/update/"):
		return KindTTL
	case method == http.MethodGet && path == "/v1/agent/checks":
		return KindChecks
	case method == http.MethodPut && path == "/v1/agent/service/register":
		return KindRegister
	case method == http.MethodPut && strings.HasPrefix(path, "/v1/agent/service/deregister/"):
		return KindDeregister
	}
	return KindOther
}

// Counts are the requests a Proxy passed on, by kind, and the watches it
// held open.
type Counts struct {
	ByKind [numKinds]int64
	// BytesByKind are the bytes of the agent's answers (bodies), by kind.
	BytesByKind [numKinds]int64
	// WatchOpen is how many watch queries are open now; WatchOpenMax the
	// most that were open at once. A node that keeps one blocking watch
	// whatever the cluster size never has more than one open.
	WatchOpen, WatchOpenMax int64
	// WatchPaths are the distinct paths watched (up to 16): one service,
	// one path.
	WatchPaths []string
	// OtherPaths are up to 16 distinct "METHOD path" of KindOther requests.
	OtherPaths []string
}

// Total is the number of requests of every kind.
func (c Counts) Total() int64 {
	var n int64
	for _, v := range c.ByKind {
		n += v
	}
	return n
}

func (c Counts) String() string {
	var b strings.Builder
	for k := range numKinds {
		if k > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%v=%d", k, c.ByKind[k])
	}
	fmt.Fprintf(&b, " watch_open_max=%d", c.WatchOpenMax)
	return b.String()
}

// Of is the number of requests of kind k.
func (c Counts) Of(k Kind) int64 { return c.ByKind[k] }

// Sub is c minus an earlier reading: the requests in between (WatchOpen
// and WatchOpenMax are c's).
func (c Counts) Sub(earlier Counts) Counts {
	d := c
	for i := range d.ByKind {
		d.ByKind[i] -= earlier.ByKind[i]
		d.BytesByKind[i] -= earlier.BytesByKind[i]
	}
	return d
}

// Add sums two readings (of two proxies): request counts and open watches
// add up; WatchOpenMax is the larger of the two, the most any one node
// held.
func (c Counts) Add(o Counts) Counts {
	s := c
	for i := range s.ByKind {
		s.ByKind[i] += o.ByKind[i]
		s.BytesByKind[i] += o.BytesByKind[i]
	}
	s.WatchOpen += o.WatchOpen
	s.WatchOpenMax = max(c.WatchOpenMax, o.WatchOpenMax)
	s.WatchPaths = union(c.WatchPaths, o.WatchPaths)
	s.OtherPaths = union(c.OtherPaths, o.OtherPaths)
	return s
}

func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		out = addDistinct(out, s)
	}
	return out
}

// addDistinct appends s to list unless it is there or list holds 16.
func addDistinct(list []string, s string) []string {
	if len(list) >= 16 || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// Proxy is an HTTP reverse proxy in front of a Consul agent that counts
// what passes through it. Give each node a proxy of its own (its
// ConsulConfig.Address) to see what that node asks of the agent: how
// many requests of each kind, and how many watches it holds open at once.
type Proxy struct {
	ln  net.Listener
	srv *http.Server
	tr  *http.Transport

	byKind       [numKinds]atomic.Int64
	bytesByKind  [numKinds]atomic.Int64
	watchOpen    atomic.Int64
	watchOpenMax atomic.Int64

	mu       sync.Mutex // protects following
	watched  []string
	others   []string
	closed   bool
	handlers sync.WaitGroup // Add only while !closed
}

// NewProxy starts a proxy on a free loopback port in front of the agent
// at agentAddr (host:port). Close stops it.
func NewProxy(agentAddr string) (*Proxy, error) {
	target, err := url.Parse("http://" + agentAddr)
	if err != nil {
		return nil, fmt.Errorf("consultest: proxy: agent address %q: %w", agentAddr, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("consultest: proxy: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 8
	p := &Proxy{ln: ln, tr: tr}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: tr,
		// A watch the node gave up on (its Stop cancels it) is no news.
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if !errors.Is(err, context.Canceled) {
				w.WriteHeader(http.StatusBadGateway)
			}
		},
	}
	p.srv = &http.Server{Handler: p.count(rp), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }() // ends in Close
	return p, nil
}

// StartProxy is NewProxy for a test: it fails the test on error and
// closes the proxy when the test ends.
func StartProxy(t testing.TB, agentAddr string) *Proxy {
	t.Helper()
	p, err := NewProxy(agentAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func (p *Proxy) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.enter() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		defer p.handlers.Done()
		k := Classify(r.Method, r.URL.Path)
		p.byKind[k].Add(1)
		switch k {
		case KindOther:
			p.note(&p.others, r.Method+" "+r.URL.Path)
		case KindWatch:
			p.note(&p.watched, r.URL.Path)
		}
		if k == KindWatch {
			open := p.watchOpen.Add(1)
			for {
				m := p.watchOpenMax.Load()
				if open <= m || p.watchOpenMax.CompareAndSwap(m, open) {
					break
				}
			}
			defer p.watchOpen.Add(-1)
		}
		next.ServeHTTP(&countingWriter{ResponseWriter: w, n: &p.bytesByKind[k]}, r)
	})
}

// countingWriter counts the body bytes written through it.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(n))
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (the reverse
// proxy flushes through it).
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// enter counts a handler in, unless Close began.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.handlers.Add(1)
	return true
}

func (p *Proxy) note(list *[]string, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*list = addDistinct(*list, s)
}

// Addr is the proxy's address, host:port: a ConsulConfig.Address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Counts reads the counters.
func (p *Proxy) Counts() Counts {
	var c Counts
	for i := range c.ByKind {
		c.ByKind[i] = p.byKind[i].Load()
		c.BytesByKind[i] = p.bytesByKind[i].Load()
	}
	c.WatchOpen = p.watchOpen.Load()
	c.WatchOpenMax = p.watchOpenMax.Load()
	p.mu.Lock()
	c.WatchPaths = append([]string(nil), p.watched...)
	c.OtherPaths = append([]string(nil), p.others...)
	p.mu.Unlock()
	return c
}

// Close stops the proxy: it closes the listener and every connection,
// open watches included, and waits for its handlers. Idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.srv.Close()
	p.handlers.Wait() // each ends once its client's connection is gone
	p.tr.CloseIdleConnections()
	return err
}
