package metrics

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/cluster"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/mailroom-go/mailroom/services"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
)

// Option adds a layer to what Register exports, or tunes it.
type Option func(*options)

type options struct {
	pools     *proxypool.Manager
	services  *services.Services
	cluster   *cluster.Cluster
	maxAge    time.Duration
	nodeLabel string
}

// DefaultNodeLabel is the label that names the node on every family
// unless WithNodeLabel says otherwise. It is not "node": a scrape
// configuration often gives its targets a node label of its own (the
// Kubernetes node, the Consul agent), which Prometheus would keep and
// rename ours to exported_node.
const DefaultNodeLabel = "mailroom_node"

// WithNodeLabel sets the label that carries the node's name on every
// family Register exports (default DefaultNodeLabel), for a scrape
// configuration that uses mailroom_node itself. "" leaves the name out of
// every family but mailroom_node_info, which then carries it as
// mailroom_node: join on the target's labels to name the node (see the
// README, "Scraping with Prometheus"). The name must be a valid label
// name that no family uses for something else (Register fails
// otherwise).
func WithNodeLabel(name string) Option { return func(o *options) { o.nodeLabel = name } }

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
// on it: its actor system, its links, and what the options add. Every
// family carries the node's name as a constant label (mailroom_node,
// WithNodeLabel), so several nodes of one process can share a registry.
// It fails, registering nothing, when reg refuses a collector (for
// instance one already registered for the same node, or a node label
// that clashes with a family's own).
func Register(reg prometheus.Registerer, node *remote.Node, opts ...Option) error {
	if reg == nil || node == nil {
		return errors.New("metrics: Register needs a registerer and a node")
	}
	o := options{maxAge: time.Second, nodeLabel: DefaultNodeLabel}
	for _, opt := range opts {
		opt(&o)
	}
	c := &collector{node: node, pools: o.pools, cluster: o.cluster, maxAge: o.maxAge, nodeInfo: descNodeInfoNamed}
	if o.nodeLabel != "" {
		if !model.LegacyValidation.IsValidLabelName(o.nodeLabel) || strings.HasPrefix(o.nodeLabel, "__") {
			return fmt.Errorf("metrics: WithNodeLabel(%q): not a valid label name", o.nodeLabel)
		}
		reg = prometheus.WrapRegistererWith(prometheus.Labels{o.nodeLabel: node.System().Name()}, reg)
		c.nodeInfo = descNodeInfo
	}
	if err := reg.Register(c); err != nil {
		return fmt.Errorf("metrics: register node %s: %w", node.System().Name(), err)
	}
	if o.services != nil {
		if err := reg.Register(o.services.Collector()); err != nil {
			reg.Unregister(c)
			return fmt.Errorf("metrics: register node %s's services: %w", node.System().Name(), err)
		}
	}
	return nil
}
