package observer

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/remote"
)

const (
	// maxIncarnations bounds the incarnations the history keeps: a peer
	// restarting in a loop cannot grow it. Past it, the incarnation that
	// went down longest ago is forgotten (then the oldest seen).
	maxIncarnations = 256
	// maxChanges bounds the changes kept per incarnation (the latest).
	maxChanges = 16
)

// Change is one thing that happened to an incarnation.
type Change struct {
	At   time.Time `json:"at"`
	What string    `json:"what"` // e.g. "discovered up", "link up", "link down", "gone", "discovered down"
}

// Incarnation is one node incarnation this node has seen, from discovery
// or from a link.
type Incarnation struct {
	Node        string    `json:"node"`
	Incarnation string    `json:"incarnation"` // actor.FormatIncarnation: 16 hex digits, as in logs and PIDs
	Addr        string    `json:"addr,omitempty"`
	Self        bool      `json:"self,omitempty"`
	State       string    `json:"state"`              // "up" or "down"
	Discovered  bool      `json:"discovered"`         // discovery reported it
	Linked      bool      `json:"linked"`             // a link to it came up
	Draining    bool      `json:"draining,omitempty"` // it announced it is draining
	FirstSeen   time.Time `json:"firstSeen"`
	Down        time.Time `json:"down,omitzero"`
	Changes     []Change  `json:"changes"`
	ChangesLeft int       `json:"changesLeft,omitempty"` // older changes not kept
}

// Event is one entry of the node's membership log.
type Event struct {
	At          time.Time `json:"at"`
	Node        string    `json:"node"`
	Incarnation string    `json:"incarnation"`
	What        string    `json:"what"`
}

// history records what the node's hooks report about other nodes. The
// hooks call it from the remote layer's goroutines: it only takes its
// lock and appends, bounded.
type history struct {
	self    string // this node's name
	selfInc uint64
	events  int // ring size

	mu      sync.Mutex // protects following
	incs    map[incKey]*Incarnation
	ring    []Event // the last events, oldest first once full (see head)
	head    int     // next slot to write once the ring is full
	total   uint64  // events recorded
	dropped uint64  // incarnations forgotten over maxIncarnations
}

type incKey struct {
	node string
	inc  uint64
}

func newHistory(self string, selfInc uint64, events int) *history {
	return &history{self: self, selfInc: selfInc, events: events, incs: make(map[incKey]*Incarnation)}
}

// hooks are the remote hooks that feed h.
func (h *history) hooks() remote.Hooks {
	return remote.Hooks{
		OnMember: func(ev discovery.Event) {
			m := ev.Member
			if m.Incarnation == 0 {
				return // a static seed before its handshake: no incarnation yet
			}
			switch ev.Type {
			case discovery.MemberUp:
				h.record(m.Node, m.Incarnation, m.Addr, "discovered up", func(in *Incarnation) { in.Discovered = true; in.Draining = m.Draining })
			case discovery.MemberUpdated:
				what := "updated"
				if m.Draining {
					what = "draining"
				}
				h.record(m.Node, m.Incarnation, m.Addr, what, func(in *Incarnation) { in.Discovered = true; in.Draining = m.Draining })
			case discovery.MemberDown:
				h.record(m.Node, m.Incarnation, m.Addr, "discovered down", func(in *Incarnation) { in.Discovered = true; h.markDown(in) })
			}
		},
		OnPeer: func(p remote.PeerInfo) {
			h.record(p.Node, p.Incarnation, p.Addr, "link up", func(in *Incarnation) { in.Linked = true })
		},
		OnLinkDown: func(p remote.PeerInfo, outbound bool) {
			what := "inbound link down"
			if outbound {
				what = "outbound link down"
			}
			h.record(p.Node, p.Incarnation, p.Addr, what, nil)
		},
		OnPeerGone: func(p remote.PeerInfo) {
			h.record(p.Node, p.Incarnation, p.Addr, "gone", h.markDown)
		},
		OnAnnounce: func(p remote.PeerInfo, draining bool, _ map[string]string) {
			if draining {
				h.record(p.Node, p.Incarnation, p.Addr, "announced draining", func(in *Incarnation) { in.Draining = true })
			}
		},
	}
}

func (h *history) markDown(in *Incarnation) {
	if in.State != "down" {
		in.State, in.Down = "down", time.Now()
	}
}

// seen makes sure a live peer the node reports is in the table (it was
// linked before Handler was called), without an event.
func (h *history) seen(p remote.PeerInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := incKey{p.Node, p.Incarnation}
	if in := h.incs[k]; in != nil {
		if in.State == "up" {
			in.Linked = true
		}
		if in.Addr == "" {
			in.Addr = p.Addr
		}
		return
	}
	in := h.add(k, p.Addr, time.Now())
	in.Linked = true
	in.Changes = append(in.Changes, Change{At: in.FirstSeen, What: "linked when the observer started"})
}

// record applies one change to node's incarnation inc, adding it if new,
// and logs it.
func (h *history) record(node string, inc uint64, addr, what string, apply func(*Incarnation)) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	k := incKey{node, inc}
	in := h.incs[k]
	if in == nil {
		in = h.add(k, addr, now)
	}
	if addr != "" {
		in.Addr = addr
	}
	if apply != nil {
		apply(in)
	}
	if len(in.Changes) == maxChanges {
		in.Changes = append(in.Changes[:0], in.Changes[1:]...)
		in.ChangesLeft++
	}
	in.Changes = append(in.Changes, Change{At: now, What: what})
	ev := Event{At: now, Node: node, Incarnation: in.Incarnation, What: what}
	h.total++
	if len(h.ring) < h.events {
		h.ring = append(h.ring, ev)
		return
	}
	h.ring[h.head] = ev
	h.head = (h.head + 1) % h.events
}

// add puts a new incarnation in the table, forgetting one if it is full.
// h.mu is held.
func (h *history) add(k incKey, addr string, now time.Time) *Incarnation {
	if len(h.incs) >= maxIncarnations {
		h.evict()
	}
	in := &Incarnation{
		Node: k.node, Incarnation: actor.FormatIncarnation(k.inc), Addr: addr, State: "up",
		Self: k.node == h.self && k.inc == h.selfInc, FirstSeen: now,
	}
	h.incs[k] = in
	return in
}

// evict forgets the incarnation that went down longest ago, or, if all
// are up, the one seen first. h.mu is held.
func (h *history) evict() {
	var victim incKey
	var best *Incarnation
	for k, in := range h.incs {
		if best == nil || older(in, best) {
			victim, best = k, in
		}
	}
	delete(h.incs, victim)
	h.dropped++
}

// older orders eviction: down before up, earlier before later.
func older(a, b *Incarnation) bool {
	if (a.State == "down") != (b.State == "down") {
		return a.State == "down"
	}
	if a.State == "down" {
		return a.Down.Before(b.Down)
	}
	return a.FirstSeen.Before(b.FirstSeen)
}

// Members is the /api/members answer.
type Members struct {
	Incarnations []Incarnation `json:"incarnations"` // by node, then first seen
	Forgotten    uint64        `json:"forgotten"`    // incarnations dropped over the bound
	Events       []Event       `json:"events"`       // the last ones, newest first
	EventsTotal  uint64        `json:"eventsTotal"`
}

// snapshot copies the table and the event log.
func (h *history) snapshot() Members {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := Members{Forgotten: h.dropped, EventsTotal: h.total}
	out.Incarnations = make([]Incarnation, 0, len(h.incs))
	for _, in := range h.incs {
		c := *in
		c.Changes = slices.Clone(in.Changes)
		out.Incarnations = append(out.Incarnations, c)
	}
	slices.SortFunc(out.Incarnations, func(a, b Incarnation) int {
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return a.FirstSeen.Compare(b.FirstSeen)
	})
	out.Events = make([]Event, 0, len(h.ring))
	for i := range h.ring {
		// newest first: walk back from the slot before head
		j := (h.head - 1 - i + 2*len(h.ring)) % len(h.ring)
		out.Events = append(out.Events, h.ring[j])
	}
	return out
}
