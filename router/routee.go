package router

import (
	"context"
	"hash/fnv"
	"strconv"

	"github.com/mailroom-go/mailroom/actor"
)

// Routee is one actor a router sends to: a PID (on this node or another),
// or a name registered on a node (Node "" is the router's own node). Set
// PID, or Name, not both.
//
// A PID routee is watched: when its actor ends (or its node incarnation
// leaves) the router removes it. A named routee is not: the name may be
// taken again by a new actor (a supervised child re-registers its name on
// every restart), so the router keeps it, and what is sent to it while no
// actor holds the name is what a SendNamed to a free name is (a counted
// dead letter; ErrNoProcess for a request, not executed).
type Routee struct {
	PID  actor.PID
	Node string
	Name string
}

// Of is the routee pid.
func Of(pid actor.PID) Routee { return Routee{PID: pid} }

// Named is the routee registered as name on node ("" for the router's
// own node).
func Named(node, name string) Routee { return Routee{Node: node, Name: name} }

// String is the PID, or "name@node".
func (r Routee) String() string {
	if r.Name != "" {
		return r.Name + "@" + r.Node
	}
	return r.PID.String()
}

// member is a routee as the router keeps it: its identity hash for the
// consistent-hash strategy, and whether it is local (for the smallest
// mailbox).
type member struct {
	Routee
	// slot is a pool routee's child ID: it keeps its hash across the
	// restarts that give it new PIDs, so its keys come back to it.
	slot  string
	hash  uint64
	local bool
}

func newMember(sys *actor.System, rt Routee, slot string) member {
	if rt.Name != "" && rt.Node == "" {
		rt.Node = sys.Name()
	}
	m := member{Routee: rt, slot: slot}
	h := fnv.New64a()
	switch {
	case slot != "":
		h.Write([]byte("slot\x00"))
		h.Write([]byte(slot))
	case rt.Name != "":
		h.Write([]byte("name\x00"))
		h.Write([]byte(rt.Node))
		h.Write([]byte{0})
		h.Write([]byte(rt.Name))
	default:
		h.Write([]byte("pid\x00"))
		h.Write([]byte(rt.PID.Node))
		h.Write([]byte{0})
		h.Write(strconv.AppendUint(nil, rt.PID.Incarnation, 16))
		h.Write([]byte{0})
		h.Write(strconv.AppendUint(nil, rt.PID.ID, 10))
	}
	m.hash = h.Sum64()
	if rt.Name != "" {
		m.local = rt.Node == sys.Name()
	} else {
		m.local = rt.PID.Node == sys.Name() && rt.PID.Incarnation == sys.Incarnation()
	}
	return m
}

// same reports whether m is the routee rt.
func (m *member) same(rt Routee) bool {
	if rt.Name != "" {
		return m.Name == rt.Name && m.Node == rt.Node
	}
	return m.Name == "" && m.PID == rt.PID
}

func (m *member) send(from actor.Caller, msg any) {
	if m.Name != "" {
		from.SendNamed(m.Node, m.Name, msg)
		return
	}
	from.Send(m.PID, msg)
}

func (m *member) request(ctx context.Context, from actor.Caller, msg any) (any, error) {
	if m.Name != "" {
		return from.RequestNamed(ctx, m.Node, m.Name, msg)
	}
	return from.Request(ctx, m.PID, msg)
}

// mailboxLen is the routee's mailbox depth, -1 when it is not a live
// local actor.
func (m *member) mailboxLen(sys *actor.System) int {
	if !m.local {
		return -1
	}
	pid := m.PID
	if m.Name != "" {
		var ok bool
		if pid, ok = sys.Lookup(m.Name); !ok {
			return -1
		}
	}
	return sys.MailboxLen(pid)
}
