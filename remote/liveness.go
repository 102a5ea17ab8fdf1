package remote

import (
	"fmt"
	"time"
)

// checkLinks sends heartbeats on idle links and closes links that have
// been silent for HeartbeatMisses intervals (a link whose reader is busy
// delivering is not silent), at now (a liveness step: clock.go).
// Closing a link fails what was pinned to it at once; the failures are
// delivered to each caller's own channel.
func (lv *liveness) checkLinks(now time.Time) {
	n := lv.node
	interval := n.cfg.Liveness.HeartbeatInterval
	silentLimit := interval * time.Duration(n.cfg.Liveness.HeartbeatMisses)
	lostWait := n.cfg.lostWait()
	for _, p := range n.livePeers() {
		p.expireLost(now, lostWait) // lostreply.go
		p.mu.Lock()
		links := make([]*link, 0, len(p.links))
		for l := range p.links {
			links = append(links, l)
		}
		p.mu.Unlock()
		for _, l := range links {
			// Reading time.Now per frame costs; the reader counts frames
			// and this loop turns a change into "heard from now". A
			// reader waiting on this node (delivering into a mailbox, a
			// fence, read budget, or admission while handlers of the peer
			// still run) is busy, not silent (admission.go); so is one
			// working through a frame (decoding, refusing, delivering a
			// batch), unless it waits for the peer: for admission with
			// every handler done, or for room to write on a link whose
			// writers all wait (the peer reads nothing).
			admitWait := l.admitWait.Load()
			working := l.handling.Load() && !admitWait && l.roomWaits.Load() == 0
			if r := l.reads.Load() + l.dataIn.Load(); r != l.seen || l.dispatching.Load() || working || (admitWait && p.adm.running()) {
				l.seen = r
				l.lastRead.Store(now.UnixNano())
				l.missed = 0
			}
			silent := now.Sub(time.Unix(0, l.lastRead.Load()))
			// A heartbeat counts missed once a whole interval passed
			// silent after the first (the grace our own ping's round
			// trip and this loop's granularity need on a healthy idle
			// link).
			if m := int64(silent/interval) - 1; m > l.missed {
				n.stats.heartbeatsMissed.Add(uint64(m - l.missed))
				l.missed = m
			}
			if silent > silentLimit {
				if admitWait {
					n.stats.linksStalled.Add(1)
					l.close(fmt.Errorf("the peer reads none of its replies: %d calls at its admission bound have only waited to hand their replies on for %v", p.adm.inflight(), silent.Round(time.Millisecond)))
				} else {
					n.stats.linksSilent.Add(1)
					l.close(fmt.Errorf("missed %d heartbeats: nothing received for %v", n.cfg.Liveness.HeartbeatMisses, silent.Round(time.Millisecond)))
				}
				continue
			}
			if now.Sub(time.Unix(0, l.lastSent.Load())) >= interval {
				l.lastSent.Store(now.UnixNano()) // one ping per interval
				_, _ = l.ping()
			}
		}
	}
}
