package discovery

import (
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"time"
)

// ConsulConfig configures a Consul provider. Zero fields take the defaults
// documented on each; DefaultConsulConfig returns them filled in.
type ConsulConfig struct {
	// Address is the HTTP address of the local Consul agent, host:port or
	// a URL ("http://...", "https://...", "unix://..."). Default: the
	// CONSUL_HTTP_ADDR environment variable, else "127.0.0.1:8500". The
	// token and TLS settings come from the usual CONSUL_HTTP_* variables.
	Address string
	// Service is the Consul service name every node registers under:
	// 1-63 letters, digits or '-'. Default "mailroom".
	Service string
	// TTL is the health check's time to live: a node that does not refresh
	// it for TTL is critical, and other nodes report it down. Default 3s.
	TTL time.Duration
	// RefreshEvery is how often the check is refreshed; it must be below
	// TTL (TTL/3 leaves room for two late refreshes). Default TTL/3 (1s).
	RefreshEvery time.Duration
	// DeregisterCriticalAfter is the check's DeregisterCriticalServiceAfter:
	// Consul removes an instance that stayed critical this long. Consul's
	// minimum is one minute (its reaper runs every 30s). Default 1m.
	DeregisterCriticalAfter time.Duration
	// WaitTime bounds one blocking health query; Consul answers sooner
	// when the service changes. Longer means fewer idle round trips,
	// shorter means faster recovery from a silently dead connection.
	// At most 10m (Consul's cap). Default 10s.
	WaitTime time.Duration
	// MinQueryInterval is the least time between two health queries, so a
	// service that changes constantly cannot make the watch spin; changes
	// that land within it are reported together. Default 50ms.
	MinQueryInterval time.Duration
	// BackoffMin and BackoffMax bound the wait after a failed health
	// query: BackoffMin, doubling per consecutive failure up to BackoffMax,
	// each with random jitter down to half. Defaults 100ms and 2s.
	BackoffMin time.Duration
	BackoffMax time.Duration
	// LeaseLockDelay is the lock delay of the session that holds this
	// incarnation's leases (Leaser): once the session ends because its
	// check went critical, Consul lets nobody take its keys for this long.
	// It is a margin on top of the holder's own expiry, which already
	// comes before Consul's; longer is safer against a holder slow to
	// stop, and delays every takeover after a death as much. At least 1ms,
	// at most 60s. Default 250ms.
	LeaseLockDelay time.Duration
	// Logger receives agent errors, re-registrations and self-death.
	// Default: the logger of the node that starts the provider
	// (remote.Start hands it its own, which is the System's), or
	// slog.Default() for a provider started by other code.
	Logger *slog.Logger
}

// Default values of ConsulConfig.
const (
	DefaultConsulAddress    = "127.0.0.1:8500"
	DefaultConsulService    = "mailroom"
	DefaultConsulTTL        = 3 * time.Second
	DefaultConsulDeregister = time.Minute
	DefaultConsulWaitTime   = 10 * time.Second
	DefaultConsulMinQuery   = 50 * time.Millisecond
	DefaultConsulBackoffMin = 100 * time.Millisecond
	DefaultConsulBackoffMax = 2 * time.Second
	DefaultConsulLockDelay  = 250 * time.Millisecond
)

// DefaultConsulConfig returns the defaults, with Address read from
// CONSUL_HTTP_ADDR now.
func DefaultConsulConfig() ConsulConfig {
	addr := os.Getenv("CONSUL_HTTP_ADDR")
	if addr == "" {
		addr = DefaultConsulAddress
	}
	return ConsulConfig{
		Address:                 addr,
		Service:                 DefaultConsulService,
		TTL:                     DefaultConsulTTL,
		RefreshEvery:            DefaultConsulTTL / 3,
		DeregisterCriticalAfter: DefaultConsulDeregister,
		WaitTime:                DefaultConsulWaitTime,
		MinQueryInterval:        DefaultConsulMinQuery,
		BackoffMin:              DefaultConsulBackoffMin,
		BackoffMax:              DefaultConsulBackoffMax,
		LeaseLockDelay:          DefaultConsulLockDelay,
	}
}

var consulServiceRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,63}$`)

// withDefaults fills zero fields and validates.
func (c ConsulConfig) withDefaults() (ConsulConfig, error) {
	d := DefaultConsulConfig()
	if c.Address == "" {
		c.Address = d.Address
	}
	if c.Service == "" {
		c.Service = d.Service
	}
	if c.TTL == 0 {
		c.TTL = d.TTL
	}
	if c.RefreshEvery == 0 {
		c.RefreshEvery = c.TTL / 3
	}
	if c.DeregisterCriticalAfter == 0 {
		c.DeregisterCriticalAfter = d.DeregisterCriticalAfter
	}
	if c.WaitTime == 0 {
		c.WaitTime = d.WaitTime
	}
	if c.MinQueryInterval == 0 {
		c.MinQueryInterval = d.MinQueryInterval
	}
	if c.BackoffMin == 0 {
		c.BackoffMin = d.BackoffMin
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = max(d.BackoffMax, c.BackoffMin)
	}
	if c.LeaseLockDelay == 0 {
		c.LeaseLockDelay = d.LeaseLockDelay
	}
	return c, c.validate()
}

func (c ConsulConfig) validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("discovery: consul config: %s: %s", field, fmt.Sprintf(format, args...))
	}
	switch {
	case !consulServiceRE.MatchString(c.Service):
		return bad("Service", "%q: want 1-63 letters, digits or '-'", c.Service)
	case c.TTL < 100*time.Millisecond:
		return bad("TTL", "is %v, want at least 100ms (0 means the default %v)", c.TTL, DefaultConsulTTL)
	case c.RefreshEvery <= 0 || c.RefreshEvery >= c.TTL:
		return bad("RefreshEvery", "is %v, want more than 0 and less than TTL (%v); 0 means TTL/3", c.RefreshEvery, c.TTL)
	case c.DeregisterCriticalAfter < time.Minute:
		return bad("DeregisterCriticalAfter", "is %v, want at least 1m (Consul's minimum)", c.DeregisterCriticalAfter)
	case c.WaitTime < 0 || c.WaitTime > 10*time.Minute:
		return bad("WaitTime", "is %v, want at most 10m (0 means the default %v)", c.WaitTime, DefaultConsulWaitTime)
	case c.MinQueryInterval < 0:
		return bad("MinQueryInterval", "is %v, want 0 or more", c.MinQueryInterval)
	case c.BackoffMin < 0:
		return bad("BackoffMin", "is %v, want more than 0", c.BackoffMin)
	case c.BackoffMax < c.BackoffMin:
		return bad("BackoffMax", "is %v, want at least BackoffMin (%v)", c.BackoffMax, c.BackoffMin)
	case c.LeaseLockDelay < time.Millisecond || c.LeaseLockDelay > time.Minute:
		return bad("LeaseLockDelay", "is %v, want 1ms to 60s (0 means the default %v)", c.LeaseLockDelay, DefaultConsulLockDelay)
	}
	return nil
}
