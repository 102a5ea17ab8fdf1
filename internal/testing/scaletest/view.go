package scaletest

import (
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/remote"
)

// view is what a node has seen of the others, through the remote
// layer's hooks: the incarnations discovery lists as up, and when each
// incarnation came and went.
type view struct {
	mu      sync.Mutex        // protects following
	members map[string]string // node → incarnation (hex) discovery reports up
	seen    map[string]*Seen  // by "node/incarnation"
}

// Seen is when a node first saw each event about one incarnation of
// another (unix ms; 0: not seen).
type Seen struct {
	Node string `json:"node"`
	Inc  string `json:"inc"`
	// Up: discovery reported it up.
	Up int64 `json:"up,omitempty"`
	// Link: a native link to it came up.
	Link int64 `json:"link,omitempty"`
	// LinkDown: a native link to it closed.
	LinkDown int64 `json:"link_down,omitempty"`
	// Down: discovery reported it down.
	Down int64 `json:"down,omitempty"`
	// Gone: the remote layer declared it gone for good (its pending
	// calls failed, its pool went).
	Gone int64 `json:"gone,omitempty"`
}

// Detected is when the node first knew the incarnation was dead: the
// remote layer declared it gone, or discovery reported it down (0: not
// yet).
func (s *Seen) Detected() int64 {
	switch {
	case s.Gone == 0:
		return s.Down
	case s.Down == 0:
		return s.Gone
	}
	return min(s.Gone, s.Down)
}

func newView() *view {
	return &view{members: map[string]string{}, seen: map[string]*Seen{}}
}

// follow installs the hooks that keep the view.
func (v *view) follow(n *remote.Node) {
	n.AddHooks(remote.Hooks{
		OnMember: func(ev discovery.Event) {
			m := ev.Member
			inc := hexInc(m.Incarnation)
			v.mu.Lock()
			defer v.mu.Unlock()
			s := v.entryLocked(m.Node, inc)
			switch ev.Type {
			case discovery.MemberUp, discovery.MemberUpdated:
				if s.Down == 0 {
					v.members[m.Node] = inc
				}
				stamp(&s.Up)
			case discovery.MemberDown:
				if v.members[m.Node] == inc {
					delete(v.members, m.Node)
				}
				stamp(&s.Down)
			}
		},
		OnPeer:     v.on(func(s *Seen) *int64 { return &s.Link }),
		OnLinkDown: func(p remote.PeerInfo, _ bool) { v.on(func(s *Seen) *int64 { return &s.LinkDown })(p) },
		OnPeerGone: v.on(func(s *Seen) *int64 { return &s.Gone }),
	})
}

// on returns a hook that stamps the field of the peer's entry.
func (v *view) on(field func(*Seen) *int64) func(remote.PeerInfo) {
	return func(p remote.PeerInfo) {
		v.mu.Lock()
		defer v.mu.Unlock()
		stamp(field(v.entryLocked(p.Node, hexInc(p.Incarnation))))
	}
}

func (v *view) entryLocked(node, inc string) *Seen {
	key := node + "/" + inc
	s := v.seen[key]
	if s == nil {
		s = &Seen{Node: node, Inc: inc}
		v.seen[key] = s
	}
	return s
}

// stamp sets *at to now unless it is set.
func stamp(at *int64) {
	if *at == 0 {
		*at = time.Now().UnixMilli()
	}
}

// goneBefore reports whether the node had seen incarnation inc of node
// dead before t (unix ms).
func (v *view) goneBefore(node, inc string, t int64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.seen[node+"/"+inc]
	if s == nil {
		return false
	}
	d := s.Detected()
	return d != 0 && d < t
}

// snapshot copies the view.
func (v *view) snapshot() (members map[string]string, seen []Seen) {
	v.mu.Lock()
	defer v.mu.Unlock()
	members = make(map[string]string, len(v.members))
	for k, x := range v.members {
		members[k] = x
	}
	seen = make([]Seen, 0, len(v.seen))
	for _, s := range v.seen {
		seen = append(seen, *s)
	}
	return members, seen
}
