package health

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/remote"
)

// Check tests one thing the node needs in order to serve. It must return
// within ctx and must not consult other nodes' readiness (see the package
// doc's cold-start rule).
type Check func(ctx context.Context) error

// Config configures a Probe. Zero fields take the documented defaults.
type Config struct {
	// LiveTimeout bounds the liveness round trip through the actor
	// scheduler. Default 1s.
	LiveTimeout time.Duration
	// ReadyTimeout bounds each Needs check. Default 1s.
	ReadyTimeout time.Duration
	// Needs are the readiness checks, by name; the name appears in the
	// 503 body when the check fails. Names are 1-64 printable characters.
	Needs map[string]Check
}

// Default values of Config.
const (
	DefaultLiveTimeout  = time.Second
	DefaultReadyTimeout = time.Second
)

func (c Config) withDefaults() (Config, error) {
	if c.LiveTimeout == 0 {
		c.LiveTimeout = DefaultLiveTimeout
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	switch {
	case c.LiveTimeout < 0:
		return c, fmt.Errorf("health: config: LiveTimeout is %v, want more than 0 (0 means %v)", c.LiveTimeout, DefaultLiveTimeout)
	case c.ReadyTimeout < 0:
		return c, fmt.Errorf("health: config: ReadyTimeout is %v, want more than 0 (0 means %v)", c.ReadyTimeout, DefaultReadyTimeout)
	}
	for name, chk := range c.Needs {
		if len(name) == 0 || len(name) > 64 || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return c, fmt.Errorf("health: config: Needs: name %q: want 1-64 printable characters", name)
		}
		if chk == nil {
			return c, fmt.Errorf("health: config: Needs[%q] is nil", name)
		}
	}
	return c, nil
}

// Probe serves one node's liveness and readiness.
type Probe struct {
	cfg   Config
	node  *remote.Node
	sys   *actor.System
	pid   actor.PID
	needs []string // sorted names of cfg.Needs
}

// ping is what the probe's actor answers.
type ping struct{}

// New spawns the probe's actor on node's System and returns the probe.
// The actor stops with the System.
func New(node *remote.Node, cfg Config) (*Probe, error) {
	if node == nil {
		return nil, errors.New("health: New: node is nil")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	sys := node.System()
	pid, err := sys.Spawn(actor.PropsFromFunc(func(c *actor.Context) {
		if _, ok := c.Message().(ping); ok {
			c.Respond(ping{})
		}
	}))
	if err != nil {
		return nil, fmt.Errorf("health: spawning the probe actor: %w", err)
	}
	p := &Probe{cfg: cfg, node: node, sys: sys, pid: pid}
	for name := range cfg.Needs {
		p.needs = append(p.needs, name)
	}
	slices.Sort(p.needs)
	return p, nil
}

// Live reports nil while the node's loops run, else what is wrong.
func (p *Probe) Live(ctx context.Context) error {
	select {
	case <-p.sys.Done():
		return errors.New("the actor system has stopped")
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.LiveTimeout)
	defer cancel()
	if _, err := p.sys.Request(ctx, p.pid, ping{}); err != nil {
		return fmt.Errorf("the actor scheduler did not answer within %v: %w", p.cfg.LiveTimeout, err)
	}
	return nil
}

// Ready reports nil while the node should receive traffic, else every
// reason it should not, joined.
func (p *Probe) Ready(ctx context.Context) error {
	if p.sys.Stopping() {
		return errors.New("stopping")
	}
	if p.node.Draining() {
		return errors.New("draining")
	}
	var errs []error
	for _, name := range p.needs {
		cctx, cancel := context.WithTimeout(ctx, p.cfg.ReadyTimeout)
		err := p.cfg.Needs[name](cctx)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("needs %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// LiveHandler serves Live: 200 "ok", or 503 with the reason.
func (p *Probe) LiveHandler() http.Handler { return probeHandler(p.Live) }

// ReadyHandler serves Ready: 200 "ok", or 503 with the reasons.
func (p *Probe) ReadyHandler() http.Handler { return probeHandler(p.Ready) }

// Handler serves GET /livez and GET /readyz.
func (p *Probe) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /livez", p.LiveHandler())
	mux.Handle("GET /readyz", p.ReadyHandler())
	return mux
}

func probeHandler(check func(context.Context) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := check(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ok: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
			return
		}
		fmt.Fprintln(w, "ok")
	})
}
