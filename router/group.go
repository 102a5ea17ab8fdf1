package router

import "github.com/mailroom-go/mailroom/actor"

// Group is a router over routees that exist already: PIDs or names, on
// this node or others. Add and Remove change its set while it runs; a PID
// routee whose actor ends, or whose node incarnation leaves, is removed.
type Group struct {
	*Router
}

// NewGroup starts a group router on sys over routees (there may be none
// yet: a Send before the first Add is ErrNoRoutees). It spawns one
// actor on sys, its watcher, which Close stops.
func NewGroup(sys *actor.System, cfg Config, routees ...Routee) (*Group, error) {
	r, err := newRouter(sys, cfg)
	if err != nil {
		return nil, err
	}
	g := &Group{Router: r}
	if err := g.Add(routees...); err != nil {
		return nil, err
	}
	return g, nil
}

// Add adds routees (one already in the group is left as it is) and
// watches the PID ones. A PID whose actor is already gone is removed
// again as soon as its watch reports it. ErrClosed after Close.
func (g *Group) Add(routees ...Routee) error {
	ms := make([]member, len(routees))
	for i, rt := range routees {
		ms[i] = newMember(g.sys, rt, "")
	}
	return g.add(ms...)
}

// Remove takes routees out of the group and reports how many it had.
// Messages already sent to them are not recalled.
func (g *Group) Remove(routees ...Routee) int {
	rts := make([]Routee, len(routees))
	for i, rt := range routees {
		rts[i] = newMember(g.sys, rt, "").Routee
	}
	return g.remove(false, rts...)
}
