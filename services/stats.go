package services

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// stats are the layer's counters. Labels are bounded by what the cluster
// provides (services, functions) and by a fixed set of reasons.
type stats struct {
	calls    sync.Map // callKey -> *atomic.Uint64
	retries  sync.Map // retryKey -> *atomic.Uint64
	running  sync.Map // fnKey -> *atomic.Int64
	acksSent atomic.Uint64
}

type callKey struct{ service, fn, result string }
type retryKey struct{ service, fn, reason string }
type fnKey struct{ service, version, fn string }

func newStats() *stats { return &stats{} }

func counter(m *sync.Map, k any) *atomic.Uint64 {
	if v, ok := m.Load(k); ok {
		return v.(*atomic.Uint64)
	}
	v, _ := m.LoadOrStore(k, new(atomic.Uint64))
	return v.(*atomic.Uint64)
}

func (s *stats) call(service, fn, result string) {
	counter(&s.calls, callKey{service, fn, result}).Add(1)
}

func (s *stats) retry(service, fn, reason string) {
	counter(&s.retries, retryKey{service, fn, reason}).Add(1)
}

func (s *stats) inflight(service, version, fn string) *atomic.Int64 {
	k := fnKey{service, version, fn}
	if v, ok := s.running.Load(k); ok {
		return v.(*atomic.Int64)
	}
	v, _ := s.running.LoadOrStore(k, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// CallCount counts finished calls (not attempts) by result: "ok",
// "executed" (a rejection or a panic), "not_executed" or
// "may_have_executed" (actor.Execution.Label).
type CallCount struct {
	Service, Function, Result string
	Count                     uint64
}

// RetryCount counts retries by the reason of the attempt that failed:
// the failure's code ("no_service", "no_version", "no_function",
// "draining", "unreachable", "not_sent", "node_down", ...) or "deadline"
// (the provider's Deadline passed mid-call; idempotent functions only).
type RetryCount struct {
	Service, Function, Reason string
	Count                     uint64
}

// InFlight is the number of calls running now in one function this node
// provides.
type InFlight struct {
	Service, Version, Function string
	Count                      int64
}

// PendingInfo is the calls this node made that wait on one provider
// incarnation, and the age of the oldest. A count that climbs on a
// healthy node points at a wedged provider.
type PendingInfo struct {
	Node        string
	Incarnation uint64
	Count       int
	Oldest      time.Duration
}

// Calls returns the call counters, sorted.
func (s *Services) Calls() []CallCount {
	var out []CallCount
	s.stats.calls.Range(func(k, v any) bool {
		ck := k.(callKey)
		out = append(out, CallCount{ck.service, ck.fn, ck.result, v.(*atomic.Uint64).Load()})
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Service+"\x00"+a.Function+"\x00"+a.Result < b.Service+"\x00"+b.Function+"\x00"+b.Result
	})
	return out
}

// Retries returns the retry counters, sorted.
func (s *Services) Retries() []RetryCount {
	var out []RetryCount
	s.stats.retries.Range(func(k, v any) bool {
		rk := k.(retryKey)
		out = append(out, RetryCount{rk.service, rk.fn, rk.reason, v.(*atomic.Uint64).Load()})
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Service+"\x00"+a.Function+"\x00"+a.Reason < b.Service+"\x00"+b.Function+"\x00"+b.Reason
	})
	return out
}

// RetriesFor sums the retries of service with the given reason ("" for
// all reasons).
func (s *Services) RetriesFor(service, reason string) uint64 {
	var n uint64
	for _, r := range s.Retries() {
		if r.Service == service && (reason == "" || r.Reason == reason) {
			n += r.Count
		}
	}
	return n
}

// InFlight returns the calls running now in this node's functions, by
// service, version and function (zero counts included once seen).
func (s *Services) InFlight() []InFlight {
	var out []InFlight
	s.stats.running.Range(func(k, v any) bool {
		fk := k.(fnKey)
		out = append(out, InFlight{fk.service, fk.version, fk.fn, v.(*atomic.Int64).Load()})
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Service+"\x00"+a.Version+"\x00"+a.Function < b.Service+"\x00"+b.Version+"\x00"+b.Function
	})
	return out
}

// Pending returns, per provider incarnation, the service calls this node
// is waiting on, sorted by node.
func (s *Services) Pending() []PendingInfo {
	now := s.clock.Now()
	s.reg.mu.Lock()
	var out []PendingInfo
	add := func(e *entry) {
		if len(e.pending) == 0 {
			return
		}
		pi := PendingInfo{Node: e.node, Incarnation: e.inc, Count: len(e.pending)}
		for _, t := range e.pending {
			if age := now.Sub(t); age > pi.Oldest {
				pi.Oldest = age
			}
		}
		out = append(out, pi)
	}
	for _, e := range s.reg.entries {
		add(e)
	}
	for e := range s.reg.retired {
		add(e)
	}
	s.reg.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// DrainAcks returns how many drain acks this node sent to stopping
// providers and received as a stopping provider.
func (s *Services) DrainAcks() (sent, received uint64) {
	s.acks.mu.Lock()
	received = s.acks.count
	s.acks.mu.Unlock()
	return s.stats.acksSent.Load(), received
}
