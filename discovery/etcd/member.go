package etcd

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/nodename"
)

// How a Member maps onto etcd. Each incarnation is one key,
//
//	<Prefix><node>/<incarnation as 16 hex digits>
//
// bound to the incarnation's lease, whose value is the JSON object
//
//	{"node": ..., "incarnation": "<16 hex digits>", "addr": "host:port",
//	 "pool_workers": 4, "draining": false, "meta": {"k": "v"}}
//
// Limits, checked on self at Start and Update (an error names the
// offending key) and on every value read from etcd (a value off them is
// ignored and logged once): Meta holds at most 64 entries, keys of 1 to
// 128 bytes of [A-Za-z0-9_.-], values of at most 512 bytes; a whole value
// is at most 64 KiB.
const (
	maxMetaEntries = 64
	maxMetaKey     = 128
	maxMetaValue   = 512
	maxValueBytes  = 64 << 10
)

type record struct {
	Node        string            `json:"node"`
	Incarnation string            `json:"incarnation"`
	Addr        string            `json:"addr"`
	PoolWorkers int               `json:"pool_workers"`
	Draining    bool              `json:"draining"`
	Meta        map[string]string `json:"meta,omitempty"`
}

// memberKey is the key of m's incarnation under prefix.
func memberKey(prefix string, m discovery.Member) string {
	return prefix + m.Node + "/" + actor.FormatIncarnation(m.Incarnation)
}

// parseKey reads the Member.ID ("node/incarnation") a key under prefix
// names.
func parseKey(prefix, key string) (string, error) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", fmt.Errorf("key %q is not under %q", key, prefix)
	}
	node, inc, ok := strings.Cut(rest, "/")
	if !ok || !nodename.Valid(node) {
		return "", fmt.Errorf("key %q: want %s<node>/<incarnation>", key, prefix)
	}
	i, err := actor.ParseIncarnation(inc)
	if err != nil {
		return "", fmt.Errorf("key %q: incarnation %q: want a non-zero hex number", key, inc)
	}
	return discovery.Member{Node: node, Incarnation: i}.ID(), nil
}

// encode is the value published for self.
func encode(m discovery.Member) ([]byte, error) {
	if err := validate(m); err != nil {
		return nil, err
	}
	b, err := json.Marshal(record{
		Node:        m.Node,
		Incarnation: actor.FormatIncarnation(m.Incarnation),
		Addr:        m.Addr,
		PoolWorkers: m.PoolWorkers,
		Draining:    m.Draining,
		Meta:        m.Meta,
	})
	if err != nil {
		return nil, fmt.Errorf("discovery: etcd: encoding %s: %w", m.ID(), err)
	}
	if len(b) > maxValueBytes {
		return nil, fmt.Errorf("discovery: etcd: %s encodes to %d bytes, at most %d allowed: shorten Member.Meta", m.ID(), len(b), maxValueBytes)
	}
	return b, nil
}

// decode reads the member stored under key (whose ID is id).
func decode(id string, value []byte) (discovery.Member, error) {
	if len(value) > maxValueBytes {
		return discovery.Member{}, fmt.Errorf("value of %d bytes: at most %d allowed", len(value), maxValueBytes)
	}
	var r record
	if err := json.Unmarshal(value, &r); err != nil {
		return discovery.Member{}, fmt.Errorf("value: %w", err)
	}
	inc, err := actor.ParseIncarnation(r.Incarnation)
	if err != nil {
		return discovery.Member{}, fmt.Errorf("incarnation %q: want a non-zero hex number", r.Incarnation)
	}
	m := discovery.Member{Node: r.Node, Incarnation: inc, Addr: r.Addr, PoolWorkers: r.PoolWorkers, Draining: r.Draining, Meta: r.Meta}
	if m.ID() != id {
		return discovery.Member{}, fmt.Errorf("value names %s, the key %s", m.ID(), id)
	}
	if err := validate(m); err != nil {
		return discovery.Member{}, err
	}
	if len(m.Meta) == 0 {
		m.Meta = nil
	}
	return m, nil
}

// validate checks m against the limits above.
func validate(m discovery.Member) error {
	if !nodename.Valid(m.Node) {
		return fmt.Errorf("discovery: etcd: Member.Node %q: want %s", m.Node, nodename.Rule)
	}
	if m.Incarnation == 0 {
		return fmt.Errorf("discovery: etcd: Member.Incarnation is 0: the etcd provider needs the node's incarnation")
	}
	host, port, err := net.SplitHostPort(m.Addr)
	if err != nil {
		return fmt.Errorf("discovery: etcd: Member.Addr %q: %w", m.Addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 || host == "" {
		return fmt.Errorf("discovery: etcd: Member.Addr %q: want host:port with a port in 1-65535", m.Addr)
	}
	if m.PoolWorkers < 0 {
		return fmt.Errorf("discovery: etcd: Member.PoolWorkers is %d, want 0 or more", m.PoolWorkers)
	}
	if len(m.Meta) > maxMetaEntries {
		return fmt.Errorf("discovery: etcd: Member.Meta has %d entries, at most %d allowed", len(m.Meta), maxMetaEntries)
	}
	for k, v := range m.Meta {
		if !validMetaKey(k) {
			return fmt.Errorf("discovery: etcd: Member.Meta key %q: want 1-%d bytes of [A-Za-z0-9_.-]", k, maxMetaKey)
		}
		if len(v) > maxMetaValue {
			return fmt.Errorf("discovery: etcd: Member.Meta[%q] is %d bytes long, at most %d allowed", k, len(v), maxMetaValue)
		}
	}
	return nil
}

func validMetaKey(k string) bool {
	if k == "" || len(k) > maxMetaKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// sameState reports whether a and b (the same incarnation) publish the
// same state, so no MemberUpdated is due.
func sameState(a, b discovery.Member) bool {
	return a.Addr == b.Addr && a.PoolWorkers == b.PoolWorkers && a.Draining == b.Draining && maps.Equal(a.Meta, b.Meta)
}
