package discovery

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
)

// Static is the embedded default provider: a fixed list of seed nodes. It
// reports each seed up with Incarnation 0; the remote layer learns the
// incarnation at the handshake and judges liveness from link heartbeats.
// A seed's address here stays the one the remote layer dials first, for
// every incarnation; the address a seed announces when it dials in is
// only tried after it fails (remote.Node.WaitPeer documents the rule).
type Static struct {
	seeds []Member

	mu      sync.Mutex // protects started
	started bool
}

// NewStatic parses seeds of the form "name=host:port".
func NewStatic(seeds ...string) (*Static, error) {
	s := &Static{}
	seen := map[string]bool{}
	for _, seed := range seeds {
		name, addr, ok := strings.Cut(seed, "=")
		if !ok || name == "" || addr == "" {
			return nil, fmt.Errorf("discovery: static seed %q: want name=host:port", seed)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("discovery: static seed %q: %w", seed, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("discovery: static seed %q: node %q listed twice", seed, name)
		}
		seen[name] = true
		s.seeds = append(s.seeds, Member{Node: name, Addr: addr})
	}
	return s, nil
}

// Start reports every seed but self as up.
func (s *Static) Start(_ context.Context, self Member, notify func(Event)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("discovery: static provider already started")
	}
	s.started = true
	for _, m := range s.seeds {
		if m.Node != self.Node {
			notify(Event{Type: MemberUp, Member: m})
		}
	}
	return nil
}

// Update is a no-op: static membership carries no metadata; the remote
// layer announces over its links.
func (s *Static) Update(context.Context, Member) error { return nil }

// Stop is a no-op.
func (s *Static) Stop(context.Context) error { return nil }

// Seeds returns the configured seeds.
func (s *Static) Seeds() []Member { return append([]Member(nil), s.seeds...) }
