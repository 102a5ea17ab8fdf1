package observer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
)

// Options configure an observer. Zero fields take the defaults documented
// on each; values past a field's maximum are cut to it.
type Options struct {
	// Token, when set, is required on every request (see the package
	// doc's token rule). Serve refuses a non-loopback address without it.
	Token string
	// Pools, when set, adds each peer's proxy pool (state, batch-size
	// histogram, queue depth) to the peers panel.
	Pools *proxypool.Manager
	// Top is how many of the deepest and of the busiest actors are
	// listed. Default 10, at most 100.
	Top int
	// Events is how many membership events are kept. Default 200, at
	// most 10,000.
	Events int
	// MinInterval: a snapshot is shared by every request within it of
	// the last one. Default 250ms, at least 50ms.
	MinInterval time.Duration
	// Refresh is how often the page polls. Default 1s, at least 100ms.
	Refresh time.Duration
	// TreeTimeout bounds the wait for the supervisors' answers in one
	// snapshot; a supervisor busy past it is shown with its error.
	// Default 500ms.
	TreeTimeout time.Duration
	// OnServe, when set, is called by Serve once it listens, with the
	// page's URL (the token in it when one is set).
	OnServe func(url string)
	// SeriesEvery is how often the charts' counters are sampled, on the
	// node's actor.Clock, from the moment Handler is called. Default 1s,
	// at least 100ms.
	SeriesEvery time.Duration
	// SeriesPoints is how many samples the charts keep. Default 300 (five
	// minutes at the default SeriesEvery), at most 3600.
	SeriesPoints int
	// Panels are extra panels, drawn after the built-in ones (see Panel),
	// at most 32.
	Panels []Panel
}

const (
	maxTop    = 100
	maxEvents = 10_000
	// maxResponseBytes is a last guard on a response: the lists are
	// capped so that none comes near it.
	maxResponseBytes = 8 << 20
)

func (o Options) withDefaults() Options {
	if o.Top <= 0 {
		o.Top = 10
	}
	o.Top = min(o.Top, maxTop)
	if o.Events <= 0 {
		o.Events = 200
	}
	o.Events = min(o.Events, maxEvents)
	if o.MinInterval <= 0 {
		o.MinInterval = 250 * time.Millisecond
	}
	o.MinInterval = max(o.MinInterval, 50*time.Millisecond)
	if o.Refresh <= 0 {
		o.Refresh = time.Second
	}
	o.Refresh = max(o.Refresh, 100*time.Millisecond)
	if o.TreeTimeout <= 0 {
		o.TreeTimeout = 500 * time.Millisecond
	}
	if o.SeriesEvery <= 0 {
		o.SeriesEvery = time.Second
	}
	o.SeriesEvery = max(o.SeriesEvery, 100*time.Millisecond)
	if o.SeriesPoints <= 0 {
		o.SeriesPoints = 300
	}
	o.SeriesPoints = min(max(o.SeriesPoints, 2), maxSeriesPoints)
	return o
}

// web holds the page (a template: the snapshot is inlined) and its
// script and style, served under /static/.
//
//go:embed web/page web/static
var web embed.FS

var (
	page     = template.Must(template.ParseFS(web, "web/page/index.html"))
	staticFS = mustSub(web, "web")
)

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// observer serves one node's view.
type observer struct {
	node    *remote.Node
	opts    Options
	token   [sha256.Size]byte // sha256 of opts.Token, compared in constant time
	hist    *history
	samp    *sampler
	started time.Time
	mux     *http.ServeMux

	mu   sync.Mutex // protects following; held while a snapshot is taken
	last *Snapshot
}

// Handler returns the observer of node: the page at "/" and the JSON
// endpoints under "/api/" (see the package doc). It answers GET and HEAD
// only and changes nothing. It starts recording node's membership events
// and sampling its counters for the charts now, until node's System
// stops: call it once per node, at start-up, and reuse it.
func Handler(node *remote.Node, opts Options) http.Handler {
	o := &observer{node: node, opts: opts.withDefaults(), started: time.Now()}
	if o.opts.Token != "" {
		o.token = sha256.Sum256([]byte(o.opts.Token))
	}
	sys := node.System()
	o.hist = newHistory(sys.Name(), sys.Incarnation(), o.opts.Events)
	o.hist.record(sys.Name(), sys.Incarnation(), node.Addr(), "this node, observer started", func(in *Incarnation) { in.Linked = true })
	node.AddHooks(o.hist.hooks())
	for _, p := range node.Peers() {
		o.hist.seen(p)
	}
	clock := sys.Config().Clock
	o.samp = newSampler(clock, o.opts.SeriesEvery, o.opts.SeriesPoints,
		func() point { return readPoint(node, o.opts.Pools, clock) }, sys.Stopping)
	sys.OnStop(func(context.Context) error { o.samp.stop(); return nil })
	o.mux = http.NewServeMux()
	o.mux.HandleFunc("/{$}", o.servePage)
	o.mux.Handle("/static/", http.FileServerFS(staticFS))
	o.mux.HandleFunc("/api/snapshot", o.api(func(s *Snapshot) any { return s }))
	o.mux.HandleFunc("/api/node", o.api(func(s *Snapshot) any { return s.Node }))
	o.mux.HandleFunc("/api/members", o.api(func(s *Snapshot) any { return s.Members }))
	o.mux.HandleFunc("/api/trees", o.api(func(s *Snapshot) any { return s.Trees }))
	o.mux.HandleFunc("/api/actors", o.api(func(s *Snapshot) any { return s.Actors }))
	o.mux.HandleFunc("/api/peers", o.api(func(s *Snapshot) any { return s.Peers }))
	o.mux.HandleFunc("/api/pending", o.api(func(s *Snapshot) any { return s.Pending }))
	o.mux.HandleFunc("/api/counters", o.api(func(s *Snapshot) any { return s.Counters }))
	o.mux.HandleFunc("/api/series", o.api(func(s *Snapshot) any { return s.Series }))
	o.mux.HandleFunc("/api/panels", o.api(func(s *Snapshot) any { return s.Panels }))
	o.mux.HandleFunc("/api/panels/{name...}", o.servePanel)
	return o
}

// servePanel answers /api/panels/{name}: the first extra panel of that
// name, or 404.
func (o *observer) servePanel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	for _, p := range o.snapshot(r.Context()).Panels {
		if p.Name == name {
			writeJSON(w, p)
			return
		}
	}
	http.Error(w, fmt.Sprintf("observer: no panel %q", name), http.StatusNotFound)
}

// ServeHTTP checks the method and the token, then routes.
func (o *observer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "observer: read-only: GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	// The page's script and style hold no data: the page loads them
	// without the token (a <script src> cannot carry a header).
	if !o.authorized(r) && !strings.HasPrefix(r.URL.Path, "/static/") {
		h.Set("WWW-Authenticate", `Bearer realm="mailroom observer"`)
		http.Error(w, "observer: a token is required: Authorization: Bearer <token>, X-Observer-Token, or ?token=", http.StatusUnauthorized)
		return
	}
	o.mux.ServeHTTP(w, r)
}

// authorized compares the request's token with ours in constant time
// (over their hashes, so the length does not leak either).
func (o *observer) authorized(r *http.Request) bool {
	if o.opts.Token == "" {
		return true
	}
	got := r.Header.Get("X-Observer-Token")
	if a := r.Header.Get("Authorization"); got == "" && len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		got = a[7:]
	}
	if got == "" {
		got = r.URL.Query().Get("token")
	}
	sum := sha256.Sum256([]byte(got))
	return got != "" && subtle.ConstantTimeCompare(sum[:], o.token[:]) == 1
}

// snapshot returns the shared snapshot, taking a new one if the last is
// older than MinInterval. One is taken at a time: concurrent requests
// wait for it and share it.
func (o *observer) snapshot(ctx context.Context) *Snapshot {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last != nil && time.Since(o.last.At) < o.opts.MinInterval {
		return o.last
	}
	// Not the request's ctx: one client leaving must not cut the
	// snapshot the others share. TreeTimeout bounds it.
	s := o.collect(context.WithoutCancel(ctx))
	o.last = &s
	return o.last
}

func (o *observer) api(part func(*Snapshot) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, part(o.snapshot(r.Context())))
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		http.Error(w, "observer: encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if buf.Len() > maxResponseBytes {
		http.Error(w, fmt.Sprintf("observer: response of %d bytes over the %d bound", buf.Len(), maxResponseBytes), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// servePage renders the page with the current snapshot inlined, so it
// draws at once (and a browser dumping its DOM sees the data); its
// script then polls /api/snapshot.
func (o *observer) servePage(w http.ResponseWriter, r *http.Request) {
	data, err := json.Marshal(o.snapshot(r.Context())) // escapes <, > and &: safe inside <script>
	if err != nil {
		http.Error(w, "observer: encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	err = page.Execute(&buf, struct {
		Node string
		Data template.JS
	}{o.node.System().Name(), template.JS(data)})
	if err != nil {
		http.Error(w, "observer: page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// ErrTokenRequired is Serve's answer for a non-loopback address without
// Options.Token.
var ErrTokenRequired = errors.New("observer: a token is required to serve on a non-loopback address (Options.Token)")

// Serve serves node's observer on addr until ctx ends, then shuts the
// server down (waiting up to 5s for requests in progress). An addr
// without a host ("" or ":7070") binds 127.0.0.1; any address that is
// not loopback needs Options.Token (ErrTokenRequired otherwise). It
// returns nil when ctx ended, else the listener's or the server's error.
func Serve(ctx context.Context, node *remote.Node, addr string, opts Options) error {
	addr, err := serveAddr(addr, opts.Token != "")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("observer: listen: %w", err)
	}
	srv := &http.Server{
		Handler:           Handler(node, opts),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	if opts.OnServe != nil {
		u := url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/"}
		if opts.Token != "" {
			u.RawQuery = url.Values{"token": {opts.Token}}.Encode()
		}
		opts.OnServe(u.String())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("observer: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("observer: shutdown: %w", err)
	}
	return nil
}

// serveAddr applies the loopback default and the token rule to addr.
func serveAddr(addr string, token bool) (string, error) {
	if addr == "" {
		addr = ":0"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("observer: address %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if !token && !loopback(host) {
		return "", fmt.Errorf("%w: %q", ErrTokenRequired, addr)
	}
	return net.JoinHostPort(host, port), nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
