package proxypool

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrPoolLinkCap: building a pool toward the peer would pass
// Config.MaxPoolLinks; traffic to it takes the native path.
var ErrPoolLinkCap = errors.New("proxypool: the node-wide cap on pool links is reached")

// capLogEvery is how often a refusal under MaxPoolLinks is logged per peer.
const capLogEvery = time.Minute

// Summary is the node's proxy pools as a whole.
type Summary struct {
	// Masters is the connection masters running; Connected those with a
	// pool published; PoolLinks the links of those pools (one per proxy).
	Masters, Connected, PoolLinks int
	// ReservedLinks is what MaxPoolLinks counts: the links reserved for
	// every master (its peer's receiver pool size), built or not.
	ReservedLinks int
	// LazyBuilds counts masters started because traffic took the native
	// path (lazy pools, the default); IdleTeardowns the pools torn down after IdleTimeout
	// with no traffic; CapRefusals the masters not started because of
	// MaxPoolLinks.
	LazyBuilds, IdleTeardowns, CapRefusals uint64
}

// summaryCounts are Summary's counters. Under Manager.mu.
type summaryCounts struct {
	lazyBuilds, idleTeardowns, capRefusals uint64
}

// Summary returns the node's proxy pools as a whole.
func (m *Manager) Summary() Summary {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Summary{
		Masters:    len(m.conns),
		LazyBuilds: m.sum.lazyBuilds, IdleTeardowns: m.sum.idleTeardowns, CapRefusals: m.sum.capRefusals,
	}
	for _, info := range m.conns {
		if info.Status == Connected {
			s.Connected++
			s.PoolLinks += info.Proxies
		}
	}
	for _, n := range m.links {
		s.ReservedLinks += n
	}
	return s
}

// reserveLinks reserves under MaxPoolLinks the links a pool toward node
// would take (need, the peer's receiver pool size: looked up when 0, 1
// when not known yet), or refuses with ErrPoolLinkCap.
func (m *Manager) reserveLinks(node string, need int) error {
	if need <= 0 {
		need = 1
		if p, ok := m.node.Peer(node); ok && p.PoolWorkers > 0 {
			need = p.PoolWorkers
		}
	}
	m.mu.Lock()
	if _, ok := m.links[node]; ok {
		m.mu.Unlock()
		return nil
	}
	if max := m.cfg.MaxPoolLinks; max > 0 {
		have := 0
		for _, n := range m.links {
			have += n
		}
		if have+need > max {
			m.sum.capRefusals++
			now := time.Now()
			log := now.Sub(m.capLogged[node]) >= capLogEvery
			if log {
				m.capLogged[node] = now
			}
			refused := m.sum.capRefusals
			m.mu.Unlock()
			if log {
				m.log.Warn("pool link cap reached: traffic to this peer takes the native path", "peer", node, "cap", max, "links", have, "would_add", need, "refusals", refused)
			}
			return fmt.Errorf("%w: %d of %d links taken, a pool toward %s needs %d", ErrPoolLinkCap, have, max, node, need)
		}
	}
	m.links[node] = need
	m.mu.Unlock()
	return nil
}

// releaseLinks gives back node's reservation.
func (m *Manager) releaseLinks(node string) {
	m.mu.Lock()
	delete(m.links, node)
	delete(m.idle, node)
	m.mu.Unlock()
}

// onNative is the remote layer's OnNativeTraffic, with lazy pools: traffic to
// node took the native path, so a pool toward it is warranted.
func (m *Manager) onNative(node string) {
	if _, ok := m.master(node); ok {
		return
	}
	m.mu.Lock()
	m.sum.lazyBuilds++
	m.mu.Unlock()
	m.autoStart(node, 0)
}

// idleState is what the idle sweep last saw of one pool's traffic.
type idleState struct {
	traffic uint64    // messages and replies through it, cumulative
	since   time.Time // when traffic last changed
}

// sweepIdle tears down, with lazy pools, every pool the manager built by itself
// that carried nothing for IdleTimeout; it runs until the manager stops.
func (m *Manager) sweepIdle() {
	every := min(max(m.cfg.IdleTimeout/4, 10*time.Millisecond), time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case now := <-t.C:
			for _, node := range m.idleNow(now) {
				m.goOwned(func() {
					ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
					defer cancel()
					if err := m.StopConnection(ctx, node); err != nil && m.ctx.Err() == nil {
						m.log.Warn("could not tear down an idle pool", "peer", node, "err", err)
					}
				})
			}
		}
	}
}

// idleNow updates the traffic seen of every automatic pool and returns
// those idle for IdleTimeout (counted as torn down, and no longer
// automatic, so that one sweep takes each once).
func (m *Manager) idleNow(now time.Time) []string {
	m.mu.Lock()
	var nodes []string
	for node, auto := range m.auto {
		if info := m.conns[node]; auto && info != nil && info.Status == Connected {
			nodes = append(nodes, node)
		}
	}
	m.mu.Unlock()
	var idle []string
	for _, node := range nodes {
		ps := m.host.Stats(node)
		traffic := ps.Messages.Load() + ps.Replies.Load()
		m.mu.Lock()
		st := m.idle[node]
		switch {
		case st == nil || st.traffic != traffic:
			m.idle[node] = &idleState{traffic: traffic, since: now}
		case now.Sub(st.since) >= m.cfg.IdleTimeout && m.auto[node]:
			delete(m.auto, node)
			delete(m.idle, node)
			m.sum.idleTeardowns++
			idle = append(idle, node)
		}
		m.mu.Unlock()
	}
	return idle
}
