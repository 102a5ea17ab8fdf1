package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/mailroom-go/mailroom/internal/nodename"
)

// dnsTarget is one node a resolution found.
type dnsTarget struct {
	node string
	addr string // host:port
}

// dnsRound is what one resolution found.
type dnsRound struct {
	targets []dnsTarget // sorted by node, unique, at most MaxTargets
	skipped int         // unnamed, badly named, duplicate or pointing nowhere
	dropped int         // beyond MaxTargets
}

// resolve resolves cfg.Name once. A name that does not exist (NXDOMAIN,
// or no records) is an empty answer, not an error: the server says there
// is nobody. Any other failure, of the name or of an SRV host, is an
// error, and the caller keeps its last view.
func resolveDNS(ctx context.Context, r *net.Resolver, cfg DNSConfig, self string) (dnsRound, error) {
	var round dnsRound
	var found []dnsTarget
	name := cfg.Name + "." // absolute: no search domains
	add := func(host string, ip netip.Addr, port int) {
		node := cfg.NodeName(host, ip.String(), port)
		switch {
		case node == self:
		case !nodename.Valid(node):
			round.skipped++
		default:
			found = append(found, dnsTarget{node: node, addr: net.JoinHostPort(ip.String(), strconv.Itoa(port))})
		}
	}
	if cfg.Port != 0 {
		ips, err := lookupIPs(ctx, r, name, cfg.Server)
		if err != nil {
			return round, err
		}
		if len(ips) > cfg.MaxTargets {
			round.dropped += len(ips) - cfg.MaxTargets
			ips = ips[:cfg.MaxTargets]
		}
		for _, ip := range ips {
			add("", ip, cfg.Port)
		}
	} else {
		_, srvs, err := r.LookupSRV(ctx, "", "", name)
		if err != nil && !isNotFound(err) && len(srvs) == 0 {
			return round, fmt.Errorf("discovery: dns: SRV %s: %w", cfg.Name, asked(err, cfg.Server))
		}
		// Records with a malformed target come back as an error beside
		// the good ones: those are skipped, the rest are used.
		slices.SortFunc(srvs, func(a, b *net.SRV) int {
			return strings.Compare(a.Target+":"+strconv.Itoa(int(a.Port)), b.Target+":"+strconv.Itoa(int(b.Port)))
		})
		if len(srvs) > cfg.MaxTargets {
			round.dropped += len(srvs) - cfg.MaxTargets
			srvs = srvs[:cfg.MaxTargets]
		}
		for _, srv := range srvs {
			host := strings.TrimSuffix(srv.Target, ".")
			if host == "" || srv.Port == 0 {
				round.skipped++
				continue
			}
			ips, err := lookupIPs(ctx, r, host+".", cfg.Server)
			if err != nil {
				return round, fmt.Errorf("discovery: dns: SRV %s target %s: %w", cfg.Name, host, err)
			}
			if len(ips) == 0 {
				round.skipped++ // the record points nowhere
				continue
			}
			add(host, ips[0], int(srv.Port))
		}
	}
	// One target per node name: the first by address (a node listed
	// twice, or two nodes claiming a name, must not flap between them).
	slices.SortFunc(found, func(a, b dnsTarget) int {
		if c := strings.Compare(a.node, b.node); c != 0 {
			return c
		}
		return strings.Compare(a.addr, b.addr)
	})
	for i, t := range found {
		if i > 0 && t.node == found[i-1].node {
			round.skipped++
			continue
		}
		round.targets = append(round.targets, t)
	}
	return round, nil
}

// lookupIPs resolves host to its addresses, IPv4 first, each group in
// order; a host that does not exist has none.
func lookupIPs(ctx context.Context, r *net.Resolver, host, server string) ([]netip.Addr, error) {
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("discovery: dns: %s: %w", strings.TrimSuffix(host, "."), asked(err, server))
	}
	for i, ip := range ips {
		ips[i] = ip.Unmap()
	}
	slices.SortFunc(ips, func(a, b netip.Addr) int {
		if a.Is4() != b.Is4() {
			if a.Is4() {
				return -1
			}
			return 1
		}
		return a.Compare(b)
	})
	return slices.Compact(ips), nil
}

// asked makes a resolver error name the server actually asked: with
// DNSConfig.Server the resolver dials it in place of the system's, but
// its errors still name the system's.
func asked(err error, server string) error {
	var de *net.DNSError
	if server == "" || !errors.As(err, &de) {
		return err
	}
	c := *de
	c.Server = server
	return &c
}

// dnsErrKey is what two failures share when they are the same failure:
// the name, and the error's last part ("connection refused", "i/o
// timeout"), without the addresses and ephemeral ports around it.
func dnsErrKey(err error) string {
	var de *net.DNSError
	if !errors.As(err, &de) {
		return err.Error()
	}
	msg := de.Err
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return de.Name + ": " + msg
}

func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// diffDNS turns the last view and a new resolution into the next view and
// the events between them: a node gone is MemberDown, a new one MemberUp,
// one at a new address MemberDown at the old then MemberUp at the new.
// Downs come first. Every member carries Incarnation 0, as a Static seed
// does: the remote layer learns the incarnation at the handshake.
func diffDNS(last map[string]Member, targets []dnsTarget) (map[string]Member, []Event) {
	next := make(map[string]Member, len(targets))
	var downs, ups []Event
	for _, t := range targets {
		m := Member{Node: t.node, Addr: t.addr}
		next[t.node] = m
		old, ok := last[t.node]
		switch {
		case !ok:
			ups = append(ups, Event{Type: MemberUp, Member: m})
		case old.Addr != m.Addr:
			downs = append(downs, Event{Type: MemberDown, Member: old})
			ups = append(ups, Event{Type: MemberUp, Member: m})
		}
	}
	var gone []string
	for node := range last {
		if _, ok := next[node]; !ok {
			gone = append(gone, node)
		}
	}
	slices.Sort(gone)
	evs := make([]Event, 0, len(gone)+len(downs)+len(ups))
	for _, node := range gone {
		evs = append(evs, Event{Type: MemberDown, Member: last[node]})
	}
	evs = append(evs, downs...)
	return next, append(evs, ups...)
}
