package services

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/actor"
)

// entry is one node incarnation as the registry knows it.
type entry struct {
	node     string
	inc      uint64
	local    bool
	marker   bool   // it runs the services layer
	seq      uint64 // sequence of the announcement applied
	draining bool   // sticky: a drain is never undone
	recs     []*record

	// calls this node has in flight to it, by call id, with their start
	pending map[uint64]time.Time
	idle    chan struct{} // closed once draining with nothing pending
	acked   bool          // the drain ack has been scheduled (under Services.mu)
}

func (e *entry) checkIdle() {
	if e.draining && len(e.pending) == 0 && e.idle != nil {
		select {
		case <-e.idle:
		default:
			close(e.idle)
		}
	}
}

type nodeInc struct {
	node string
	inc  uint64
}

// registry is the calling side's view of who provides what.
type registry struct {
	mu      sync.Mutex // protects following
	entries map[string]*entry
	retired map[*entry]struct{}   // gone, with calls still pending
	tomb    map[nodeInc]time.Time // incarnations known gone
	nextID  uint64
	changed chan struct{} // closed and replaced on every change of entries (WaitProvider)

	ignoreDraining bool // tests: pick draining providers as if they were not
}

func newRegistry() *registry {
	return &registry{entries: map[string]*entry{}, retired: map[*entry]struct{}{}, tomb: map[nodeInc]time.Time{}, changed: make(chan struct{})}
}

// changedLocked wakes the waiters on the registry (WaitProvider).
func (r *registry) changedLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// tombTTL bounds how long a gone incarnation is remembered.
const tombTTL = 10 * time.Minute

// update applies an announcement (meta nil: unknown, keep what is known).
// It returns the entry when this update started its drain.
func (r *registry) update(node string, inc uint64, draining bool, meta map[string]string) (*entry, []error) {
	if inc == 0 {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dead := r.tomb[nodeInc{node, inc}]; dead {
		return nil, nil
	}
	defer r.changedLocked()
	e := r.entries[node]
	if e != nil && e.local {
		return nil, nil
	}
	if e == nil || e.inc != inc {
		if e != nil {
			r.buryLocked(e) // a newer incarnation is up: the old one is gone
		}
		e = &entry{node: node, inc: inc, pending: map[uint64]time.Time{}}
		r.entries[node] = e
	}
	var errs []error
	if meta != nil {
		seq := markerSeq(meta[metaMarker])
		if seq == 0 || seq >= e.seq {
			var recs []*record
			e.marker, recs, errs = decodeMeta(meta)
			e.recs, e.seq = recs, seq
		}
	}
	if draining && !e.draining {
		e.draining = true
		e.checkIdle()
		return e, errs
	}
	return nil, errs
}

// gone forgets an incarnation for good.
func (r *registry) gone(node string, inc uint64) {
	if inc == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.changedLocked()
	if e := r.entries[node]; e != nil && e.inc == inc && !e.local {
		r.buryLocked(e)
		delete(r.entries, node)
		return
	}
	r.tomb[nodeInc{node, inc}] = time.Now()
}

func (r *registry) buryLocked(e *entry) {
	now := time.Now()
	r.tomb[nodeInc{e.node, e.inc}] = now
	for k, t := range r.tomb {
		if now.Sub(t) > tombTTL {
			delete(r.tomb, k)
		}
	}
	if len(e.pending) > 0 {
		r.retired[e] = struct{}{}
	}
	e.draining = true // nothing more goes there
	e.checkIdle()
}

// setLocal installs this node's own services.
func (r *registry) setLocal(node string, inc uint64, recs []*record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.changedLocked()
	e := r.entries[node]
	if e == nil {
		e = &entry{node: node, inc: inc, local: true, marker: true, pending: map[uint64]time.Time{}}
		r.entries[node] = e
	}
	e.recs = recs
}

// drainLocal marks this node's own services draining.
func (r *registry) drainLocal(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.changedLocked()
	if e := r.entries[node]; e != nil && e.local {
		e.draining = true
		e.checkIdle()
	}
}

// candidate is the provider chosen for one attempt.
type candidate struct {
	e   *entry
	rec *record
	fn  fnRecord
	id  uint64
}

// acquire picks a provider of service (want) with fn, not draining,
// preferring another node than avoid, and registers the call as pending
// on it (when register) in the same critical section: once an entry is draining no call
// can pick it, so "nothing pending" means "nothing will be sent".
func (r *registry) acquire(service string, want Constraint, fn, avoid string, now time.Time, register bool) (candidate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var named, compat, withFn, live []candidate
	for _, e := range r.entries {
		for _, rec := range e.recs {
			if rec.Name != service {
				continue
			}
			c := candidate{e: e, rec: rec}
			named = append(named, c)
			if !want.Allows(rec.Version) {
				continue
			}
			compat = append(compat, c)
			f, ok := rec.fn(fn)
			if !ok {
				continue
			}
			c.fn = f
			withFn = append(withFn, c)
			if !e.draining || r.ignoreDraining {
				live = append(live, c)
			}
		}
	}
	lerr := func(err error, seen []candidate, withFns bool) error {
		return &LookupError{Service: service, Want: want, Function: fn, Err: err, Seen: describe(seen, withFns)}
	}
	switch {
	case len(named) == 0:
		return candidate{}, lerr(actor.ErrNoService, nil, false)
	case len(compat) == 0:
		return candidate{}, lerr(actor.ErrNoVersion, named, false)
	case len(withFn) == 0:
		return candidate{}, lerr(actor.ErrNoFunction, compat, true)
	case len(live) == 0:
		return candidate{}, lerr(actor.ErrDraining, withFn, false)
	}
	if len(live) > 1 && avoid != "" {
		others := live[:0:0]
		for _, c := range live {
			if c.e.node != avoid {
				others = append(others, c)
			}
		}
		if len(others) > 0 {
			live = others
		}
	}
	c := live[rand.IntN(len(live))]
	if !register {
		return c, nil
	}
	r.nextID++
	c.id = r.nextID
	c.e.pending[c.id] = now
	return c, nil
}

// release ends a call acquire registered.
func (r *registry) release(c candidate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(c.e.pending, c.id)
	if len(c.e.pending) == 0 {
		delete(r.retired, c.e)
	}
	c.e.checkIdle()
}

// idle returns a channel closed once e is draining and has no call of
// this node pending.
func (r *registry) idle(e *entry) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.idle == nil {
		e.idle = make(chan struct{})
	}
	e.checkIdle()
	return e.idle
}

// describe lists candidates for an error message, sorted.
func describe(cs []candidate, withFns bool) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		s := fmt.Sprintf("%s on %s (incarnation %016x", c.rec.Version, c.e.node, c.e.inc)
		if c.e.draining {
			s += ", draining"
		}
		s += ")"
		if withFns {
			names := make([]string, len(c.rec.Fns))
			for i, f := range c.rec.Fns {
				names[i] = f.Name
			}
			s += " has " + strings.Join(names, ", ")
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// markerSeq reads the announcement sequence from the marker "1:<seq>".
func markerSeq(v string) uint64 {
	_, seq, ok := strings.Cut(v, ":")
	if !ok {
		return 0
	}
	n, _ := strconv.ParseUint(seq, 10, 64)
	return n
}
