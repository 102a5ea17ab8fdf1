package discoverytest

import (
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
)

// Recorder collects the events a provider delivers, with the time each
// arrived. Its Notify is the notify function given to Provider.Start.
type Recorder struct {
	mu  sync.Mutex // protects following
	evs []discovery.Event
	at  []time.Time
}

// Notify records e.
func (r *Recorder) Notify(e discovery.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
	r.at = append(r.at, time.Now())
}

// Count returns how many events of type typ about m's incarnation arrived.
func (r *Recorder) Count(typ discovery.EventType, m discovery.Member) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.evs {
		if e.Type == typ && e.Member.ID() == m.ID() {
			n++
		}
	}
	return n
}

// Events returns a copy of every event so far.
func (r *Recorder) Events() []discovery.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]discovery.Event(nil), r.evs...)
}

// Wait polls until an event of type typ about m's incarnation (matching
// match, if given) arrived, or fails the test after timeout. It returns
// the event and when it arrived.
func (r *Recorder) Wait(t testing.TB, timeout time.Duration, typ discovery.EventType, m discovery.Member, match ...func(discovery.Member) bool) (discovery.Event, time.Time) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		for i, e := range r.evs {
			if e.Type == typ && e.Member.ID() == m.ID() && (len(match) == 0 || match[0](e.Member)) {
				at := r.at[i]
				r.mu.Unlock()
				return e, at
			}
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no %v event for %s within %v; got %v", typ, m.ID(), timeout, r.Events())
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}
