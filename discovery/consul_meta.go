package discovery

import (
	"fmt"
	"maps"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/consul/api"
	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/nodename"
)

// How a Member maps onto a Consul service instance.
//
// The instance ID is "<service>-<node>-<incarnation as 16 hex digits>", so
// every incarnation is its own instance. The service meta carries:
//
//	node         Member.Node
//	incarnation  Member.Incarnation, 16 hex digits
//	addr         Member.Addr (also split into the service Address and Port)
//	pool_size    Member.PoolWorkers, decimal (the key predates the field's name)
//	draining     "true" or "false"
//	m_<key>      one entry per Member.Meta key
//
// Consul limits service meta to 64 pairs, keys to 128 characters of
// [A-Za-z0-9_-] and values to 512 characters; keys may not start with
// "consul-". So Member.Meta may hold at most 59 entries, its keys at most
// 126 characters of [A-Za-z0-9_-] (the "m_" prefix takes two), its values
// at most 512 characters. Start and Update check this and return an error
// naming the offending key.
const (
	metaNode        = "node"
	metaIncarnation = "incarnation"
	metaAddr        = "addr"
	metaPoolSize    = "pool_size"
	metaDraining    = "draining"
	metaUserPrefix  = "m_"

	consulMaxMetaPairs = 64
	consulMaxKeyLen    = 128
	consulMaxValueLen  = 512
	reservedMetaPairs  = 5
)

var (
	metaKeyRE  = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	maxUserKey = consulMaxKeyLen - len(metaUserPrefix)
)

// instanceID is the Consul service ID of one incarnation.
func instanceID(service string, m Member) string {
	return service + "-" + m.Node + "-" + actor.FormatIncarnation(m.Incarnation)
}

// checkID is the ID of the incarnation's TTL check.
func checkID(serviceID string) string { return serviceID + ":ttl" }

// validateSelf checks that self can be published in Consul.
func validateSelf(m Member) error {
	if !nodename.Valid(m.Node) {
		return fmt.Errorf("discovery: consul: Member.Node %q: want %s", m.Node, nodename.Rule)
	}
	if m.Incarnation == 0 {
		return fmt.Errorf("discovery: consul: Member.Incarnation is 0: the Consul provider needs the node's incarnation")
	}
	if _, err := splitAddr(m.Addr); err != nil {
		return err
	}
	if m.PoolWorkers < 0 {
		return fmt.Errorf("discovery: consul: Member.PoolWorkers is %d, want 0 or more", m.PoolWorkers)
	}
	if len(m.Meta) > consulMaxMetaPairs-reservedMetaPairs {
		return fmt.Errorf("discovery: consul: Member.Meta has %d entries, Consul allows at most %d", len(m.Meta), consulMaxMetaPairs-reservedMetaPairs)
	}
	for k, v := range m.Meta {
		switch {
		case len(k) > maxUserKey || !metaKeyRE.MatchString(k):
			return fmt.Errorf("discovery: consul: Member.Meta key %q: want 1-%d characters of [A-Za-z0-9_-]", k, maxUserKey)
		case len(v) > consulMaxValueLen:
			return fmt.Errorf("discovery: consul: Member.Meta[%q] is %d bytes long, Consul allows at most %d", k, len(v), consulMaxValueLen)
		}
	}
	return nil
}

type hostPort struct {
	host string
	port int
}

func splitAddr(addr string) (hostPort, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return hostPort{}, fmt.Errorf("discovery: consul: Member.Addr %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return hostPort{}, fmt.Errorf("discovery: consul: Member.Addr %q: port %q is not in 1-65535", addr, p)
	}
	return hostPort{host, port}, nil
}

// registration builds the agent registration of self. status is the TTL
// check's initial status; "" keeps the status of an existing check.
func registration(cfg ConsulConfig, self Member, status string) *api.AgentServiceRegistration {
	id := instanceID(cfg.Service, self)
	hp, _ := splitAddr(self.Addr) // validated by validateSelf
	meta := make(map[string]string, reservedMetaPairs+len(self.Meta))
	meta[metaNode] = self.Node
	meta[metaIncarnation] = actor.FormatIncarnation(self.Incarnation)
	meta[metaAddr] = self.Addr
	meta[metaPoolSize] = strconv.Itoa(self.PoolWorkers)
	meta[metaDraining] = strconv.FormatBool(self.Draining)
	for k, v := range self.Meta {
		meta[metaUserPrefix+k] = v
	}
	return &api.AgentServiceRegistration{
		ID:      id,
		Name:    cfg.Service,
		Address: hp.host,
		Port:    hp.port,
		Meta:    meta,
		Checks: api.AgentServiceChecks{{
			CheckID:                        checkID(id),
			Name:                           "mailroom incarnation TTL",
			Notes:                          "refreshed by the mailroom node; critical means the incarnation is dead for good",
			TTL:                            cfg.TTL.String(),
			Status:                         status,
			DeregisterCriticalServiceAfter: cfg.DeregisterCriticalAfter.String(),
		}},
	}
}

// parseMember reads a Member back from a service instance's meta.
func parseMember(svc *api.AgentService) (Member, error) {
	if svc == nil {
		return Member{}, fmt.Errorf("no service")
	}
	meta := svc.Meta
	m := Member{Node: meta[metaNode], Addr: meta[metaAddr]}
	if m.Node == "" {
		return Member{}, fmt.Errorf("meta %q missing", metaNode)
	}
	inc, err := actor.ParseIncarnation(meta[metaIncarnation])
	if err != nil {
		return Member{}, fmt.Errorf("meta %q is %q: want a non-zero hex number", metaIncarnation, meta[metaIncarnation])
	}
	m.Incarnation = inc
	if m.Addr == "" {
		return Member{}, fmt.Errorf("meta %q missing", metaAddr)
	}
	if m.PoolWorkers, err = strconv.Atoi(meta[metaPoolSize]); err != nil {
		return Member{}, fmt.Errorf("meta %q is %q: want a number", metaPoolSize, meta[metaPoolSize])
	}
	if m.Draining, err = strconv.ParseBool(meta[metaDraining]); err != nil {
		return Member{}, fmt.Errorf("meta %q is %q: want true or false", metaDraining, meta[metaDraining])
	}
	for k, v := range meta {
		if key, ok := strings.CutPrefix(k, metaUserPrefix); ok && key != "" {
			if m.Meta == nil {
				m.Meta = map[string]string{}
			}
			m.Meta[key] = v
		}
	}
	return m, nil
}

// sameState reports whether a and b (the same incarnation) publish the
// same state, so no MemberUpdated is due.
func sameState(a, b Member) bool {
	return a.Addr == b.Addr && a.PoolWorkers == b.PoolWorkers && a.Draining == b.Draining && maps.Equal(a.Meta, b.Meta)
}
