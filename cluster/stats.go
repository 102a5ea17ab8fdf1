package cluster

import "sync/atomic"

// counters are the cluster layer's counters (Stats).
type counters struct {
	activations, passivations, handovers  atomic.Uint64
	handoffs                              atomic.Uint64
	leasesAcquired, leasesLost, leaseBusy atomic.Uint64
	cacheHits, cacheMisses                atomic.Uint64
	refusals, refusalsSeen                atomic.Uint64
}

// Stats are the cluster layer's counters on one node, since Start.
type Stats struct {
	Activations    uint64 // activations started here
	Passivations   uint64 // activations that ended other than by a handover, a lost lease or the node stopping: idle (Kind.IdleTimeout), or stopped (by the grain itself, usually)
	Handovers      uint64 // activations stopped because another node owns them now (once each)
	Handoffs       uint64 // activations started here after the previous owner handed off (Static)
	LeasesAcquired uint64 // owner leases taken
	LeasesLost     uint64 // owner leases lost while their activation ran
	LeasesBusy     uint64 // activations refused: the lease was held elsewhere
	CacheHits      uint64 // messages sent on a cached placement
	CacheMisses    uint64 // messages that needed an activation call first
	Refusals       uint64 // "not the owner" answered by this node (activation asked, or a message to an activation whose lease is lost)
	Retries        uint64 // refusals and stale placements this node retried
}

// Stats returns the counters.
func (c *Cluster) Stats() Stats {
	s := &c.stats
	return Stats{
		Activations: s.activations.Load(), Passivations: s.passivations.Load(), Handovers: s.handovers.Load(), Handoffs: s.handoffs.Load(),
		LeasesAcquired: s.leasesAcquired.Load(), LeasesLost: s.leasesLost.Load(), LeasesBusy: s.leaseBusy.Load(),
		CacheHits: s.cacheHits.Load(), CacheMisses: s.cacheMisses.Load(),
		Refusals: s.refusals.Load(), Retries: s.refusalsSeen.Load(),
	}
}
