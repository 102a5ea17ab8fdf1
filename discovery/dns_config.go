package discovery

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"
)

// DNSConfig configures a DNS provider. Zero fields take the defaults
// documented on each.
type DNSConfig struct {
	// Name is what is resolved, as an absolute name (the resolver's
	// search domains are not applied). With Port 0 it is an SRV name
	// ("_mailroom._tcp.shop.default.svc.cluster.local"): each SRV record
	// is a target at its own port, its host resolved to an address. With
	// Port set it is an A/AAAA name (a headless Service's
	// "shop.default.svc.cluster.local"): each address is a target at
	// Port. At most 253 bytes. Required.
	Name string
	// Port, when set, makes Name an A/AAAA name whose every address is a
	// node listening on Port. 0: Name is an SRV name.
	Port int
	// Server is the DNS server to ask, host:port (UDP, and TCP for a
	// truncated answer). Default: the system resolver (/etc/resolv.conf).
	Server string
	// Interval is how often Name is resolved again. Default 5s; at
	// least 10ms.
	Interval time.Duration
	// Timeout bounds one round: the resolution of Name and of every SRV
	// host in it. Default 2s.
	Timeout time.Duration
	// MaxTargets bounds how many targets one resolution keeps (sorted by
	// node name, the rest dropped, counted and logged). Default 256.
	MaxTargets int
	// NodeName names the node at a target: host is the SRV record's
	// target host without its final dot (SRV), or "" (A/AAAA); ip and
	// port are where it listens. A name that breaks the node name rule,
	// or "", skips the target (counted in DNSStats.Skipped). The node's
	// remote layer refuses a dial that reaches another name (the dial
	// asks for this one), so this must return the name the node was
	// started with. Default: the first label of host for SRV (a
	// StatefulSet pod's "shop-0" of "shop-0.shop.default.svc.cluster.local"),
	// the IP itself for A/AAAA ("10.1.2.3"; an IPv6 address with '-' for
	// ':'), so nodes are named after their pod IP.
	NodeName func(host, ip string, port int) string
	// Logger receives resolver errors (once per change) and dropped
	// targets. Default: the logger of the node that starts the provider
	// (remote.Start hands it its own), or slog.Default().
	Logger *slog.Logger
}

// Default values of DNSConfig.
const (
	DefaultDNSInterval   = 5 * time.Second
	DefaultDNSTimeout    = 2 * time.Second
	DefaultDNSMaxTargets = 256
	// dnsMinInterval bounds how often a provider may ask its server.
	dnsMinInterval = 10 * time.Millisecond
	// dnsMaxName is the longest DNS name (RFC 1035, in text form).
	dnsMaxName = 253
	// dnsBackoffFactor: after consecutive resolver errors the wait is
	// Interval doubling per error, up to this many Intervals.
	dnsBackoffFactor = 8
)

// withDefaults fills zero fields and checks the rest, naming the field.
func (c DNSConfig) withDefaults() (DNSConfig, error) {
	c.Name = strings.TrimSuffix(c.Name, ".")
	switch {
	case c.Name == "":
		return c, fmt.Errorf("discovery: dns: DNSConfig.Name is empty")
	case len(c.Name) > dnsMaxName:
		return c, fmt.Errorf("discovery: dns: DNSConfig.Name is %d bytes long, DNS allows at most %d", len(c.Name), dnsMaxName)
	case c.Port < 0 || c.Port > 65535:
		return c, fmt.Errorf("discovery: dns: DNSConfig.Port is %d, want 0 (SRV) or 1-65535", c.Port)
	case c.Interval < 0 || c.Timeout < 0 || c.MaxTargets < 0:
		return c, fmt.Errorf("discovery: dns: DNSConfig: Interval, Timeout and MaxTargets must not be negative")
	}
	if c.Server != "" {
		if _, _, err := net.SplitHostPort(c.Server); err != nil {
			return c, fmt.Errorf("discovery: dns: DNSConfig.Server %q: want host:port: %w", c.Server, err)
		}
	}
	if c.Interval == 0 {
		c.Interval = DefaultDNSInterval
	}
	if c.Interval < dnsMinInterval {
		return c, fmt.Errorf("discovery: dns: DNSConfig.Interval is %v, want at least %v", c.Interval, dnsMinInterval)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultDNSTimeout
	}
	if c.MaxTargets == 0 {
		c.MaxTargets = DefaultDNSMaxTargets
	}
	if c.NodeName == nil {
		c.NodeName = defaultDNSNodeName
	}
	return c, nil
}

// defaultDNSNodeName is DNSConfig.NodeName's default.
func defaultDNSNodeName(host, ip string, _ int) string {
	if host != "" {
		label, _, _ := strings.Cut(host, ".")
		return label
	}
	return strings.ReplaceAll(ip, ":", "-")
}
