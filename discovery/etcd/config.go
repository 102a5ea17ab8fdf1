package etcd

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Config configures an etcd provider. Zero fields take the defaults
// documented on each.
type Config struct {
	// Endpoints are the etcd client URLs ("http://127.0.0.1:2379").
	// Default: the ETCD_ENDPOINTS environment variable (comma-separated),
	// else "http://127.0.0.1:2379".
	Endpoints []string
	// TLS, Username and Password authenticate to etcd when set.
	TLS      *tls.Config
	Username string
	Password string
	// Prefix is the key prefix every node of the cluster registers under;
	// it must end with '/'. Default "/mailroom/members/".
	Prefix string
	// TTL is the time to live of each incarnation's lease, in whole
	// seconds (etcd grants leases by the second): a node that does not
	// renew it for TTL has its key deleted by etcd, and other nodes
	// report it down. At least 2s (etcd's least lease TTL is about 1.5s).
	// Default 3s.
	TTL time.Duration
	// RefreshEvery is how often the lease is renewed; below TTL (TTL/3
	// leaves room for two late renewals). Default TTL/3.
	RefreshEvery time.Duration
	// DialTimeout bounds connecting to etcd at Start. Default 5s.
	DialTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait before the watch is
	// reopened after an error: BackoffMin doubling per consecutive
	// failure up to BackoffMax, with jitter down to half. Defaults 100ms
	// and 2s.
	BackoffMin time.Duration
	BackoffMax time.Duration
	// Logger receives etcd errors, relists and self-death. Default
	// slog.Default().
	Logger *slog.Logger
}

// Default values of Config.
const (
	DefaultEndpoint    = "http://127.0.0.1:2379"
	DefaultPrefix      = "/mailroom/members/"
	DefaultTTL         = 3 * time.Second
	DefaultDialTimeout = 5 * time.Second
	DefaultBackoffMin  = 100 * time.Millisecond
	DefaultBackoffMax  = 2 * time.Second
)

func (c Config) withDefaults(env func(string) string) (Config, error) {
	if len(c.Endpoints) == 0 {
		if e := env("ETCD_ENDPOINTS"); e != "" {
			c.Endpoints = strings.Split(e, ",")
		} else {
			c.Endpoints = []string{DefaultEndpoint}
		}
	}
	for _, e := range c.Endpoints {
		if strings.TrimSpace(e) == "" {
			return c, fmt.Errorf("discovery: etcd config: Endpoints holds an empty endpoint")
		}
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if !strings.HasSuffix(c.Prefix, "/") || len(c.Prefix) > 256 {
		return c, fmt.Errorf("discovery: etcd config: Prefix %q: want at most 256 bytes ending with '/'", c.Prefix)
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.TTL < 2*time.Second || c.TTL%time.Second != 0 {
		return c, fmt.Errorf("discovery: etcd config: TTL %v: want whole seconds, at least 2s", c.TTL)
	}
	if c.RefreshEvery == 0 {
		c.RefreshEvery = c.TTL / 3
	}
	if c.RefreshEvery <= 0 || c.RefreshEvery >= c.TTL {
		return c, fmt.Errorf("discovery: etcd config: RefreshEvery %v: want more than 0 and less than TTL (%v)", c.RefreshEvery, c.TTL)
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.DialTimeout < 0 {
		return c, fmt.Errorf("discovery: etcd config: DialTimeout %v: want more than 0", c.DialTimeout)
	}
	if c.BackoffMin == 0 {
		c.BackoffMin = DefaultBackoffMin
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = max(DefaultBackoffMax, c.BackoffMin)
	}
	if c.BackoffMin < 0 || c.BackoffMax < c.BackoffMin {
		return c, fmt.Errorf("discovery: etcd config: BackoffMin %v, BackoffMax %v: want 0 < BackoffMin <= BackoffMax", c.BackoffMin, c.BackoffMax)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
