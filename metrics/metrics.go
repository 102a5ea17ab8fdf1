package metrics

import (
	"errors"
	"time"

	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/mailroom-go/mailroom/services"
	"github.com/prometheus/client_golang/prometheus"
)

// Option adds a layer to what Register exports, or tunes it.
type Option func(*options)

type options struct {
	pools    *proxypool.Manager
	services *services.Services
	maxAge   time.Duration
}

// WithPools exports the proxy pools m runs (mailroom_pool_* families).
func WithPools(m *proxypool.Manager) Option { return func(o *options) { o.pools = m } }

// WithServices registers s's collector too (mailroom_services_*; see
// services.Services.Collector).
func WithServices(s *services.Services) Option { return func(o *options) { o.services = s } }

// WithSampleAge sets how old a mailbox sample may be and still be shared
// instead of walking the actors again (default 1s; the observer shares
// the same samples). Zero walks at every scrape.
func WithSampleAge(d time.Duration) Option { return func(o *options) { o.maxAge = d } }

// Register registers with reg a collector of node's figures, every layer
// on it: its actor system, its links, and what the options add. It fails,
// registering nothing, when reg refuses a collector (for instance one
// already registered for the same node: register each node on its own
// registry, or wrap reg with prometheus.WrapRegistererWith and a label
// per node).
func Register(reg prometheus.Registerer, node *remote.Node, opts ...Option) error {
	if reg == nil || node == nil {
		return errors.New("metrics: Register needs a registerer and a node")
	}
	o := options{maxAge: time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	c := &collector{node: node, pools: o.pools, maxAge: o.maxAge}
	if err := reg.Register(c); err != nil {
		return err
	}
	if o.services != nil {
		if err := reg.Register(o.services.Collector()); err != nil {
			reg.Unregister(c)
			return err
		}
	}
	return nil
}
