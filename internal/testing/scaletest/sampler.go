package scaletest

import (
	"sync"
	"time"
)

// nodeSample is one reading of one node: its snapshot's link counts and
// /proc.
type nodeSample struct {
	Links, PoolOut, PoolIn, Goroutines int
	Proc
}

// Native is the node's native links: every link that is not a pool link
// it dialed or a pool link a peer dialed to it.
func (s nodeSample) Native() int { return s.Links - s.PoolOut - s.PoolIn }

// sample is one reading of every live node.
type sample struct {
	at    time.Time
	nodes map[string]nodeSample
}

// sampler reads every live node every interval, from a goroutine of its
// own, until stop.
type sampler struct {
	c    *cluster
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex // protects following
	samples []sample
	max     nodeSample // the largest of each figure, any node, any time
}

func startSampler(c *cluster, every time.Duration) *sampler {
	s := &sampler{c: c, done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.take()
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() {
	close(s.done)
	s.wg.Wait()
}

// take reads every live node once. The process list is read under the
// cluster's control: the driver does not start or kill while a sampler
// runs take (it calls pause around those).
func (s *sampler) take() {
	s.mu.Lock()
	defer s.mu.Unlock()
	snaps := s.c.snapshots()
	poolIn := map[string]int{}
	for _, snap := range snaps {
		for peer, n := range snap.PoolLinksTo {
			poolIn[peer] += n
		}
	}
	x := sample{at: time.Now(), nodes: map[string]nodeSample{}}
	for _, m := range s.c.live() {
		snap, ok := snaps[m.name]
		if !ok {
			continue
		}
		p, err := ReadProc(m.child.Pid())
		if err != nil {
			continue // it just exited
		}
		ns := nodeSample{Links: snap.Links, PoolOut: snap.PoolLinks, PoolIn: poolIn[m.name], Goroutines: snap.Goroutines, Proc: p}
		x.nodes[m.name] = ns
		s.max.Links = max(s.max.Links, ns.Links)
		s.max.PoolOut = max(s.max.PoolOut, ns.PoolOut)
		s.max.PoolIn = max(s.max.PoolIn, ns.PoolIn)
		s.max.Goroutines = max(s.max.Goroutines, ns.Goroutines)
		s.max.FDs = max(s.max.FDs, ns.FDs)
		s.max.Sockets = max(s.max.Sockets, ns.Sockets)
		s.max.RSS = max(s.max.RSS, ns.RSS)
	}
	s.samples = append(s.samples, x)
}

// between returns the samples taken in [from, to].
func (s *sampler) between(from, to time.Time) []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sample
	for _, x := range s.samples {
		if !x.at.Before(from) && !x.at.After(to) {
			out = append(out, x)
		}
	}
	return out
}

// maxima returns the largest figures seen so far.
func (s *sampler) maxima() nodeSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}
