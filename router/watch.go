package router

import "github.com/mailroom-go/mailroom/actor"

// The watcher is a small actor per router, on the router's node: it
// watches every PID routee (local, or remote over the remote layer's
// watch) and removes the routee when its actor.Terminated comes (the
// actor ended, or its node incarnation left: a link that failed, missed
// heartbeats, or discovery). The router sends it watchReq and unwatchReq
// under its lock, so they arrive in the order the set changed.
type (
	watchReq   struct{ pid actor.PID }
	unwatchReq struct{ pid actor.PID }
)

func (r *Router) watch(c *actor.Context) {
	switch m := c.Message().(type) {
	case watchReq:
		c.Watch(m.pid)
	case unwatchReq:
		c.Unwatch(m.pid)
	case actor.Terminated:
		if r.remove(true, Of(m.PID)) > 0 {
			c.Logger().Debug("router: routee ended; removed", "routee", m.PID.String(), "reason", m.Reason)
		}
	}
}
