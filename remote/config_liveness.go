package remote

import (
	"fmt"
	"time"
)

// Liveness says when this node gives up on a link, a peer or a node name
// (Config.Liveness). Zero fields take the defaults documented on each
// (DefaultLiveness). The heartbeat window, HeartbeatInterval x
// HeartbeatMisses, is also how long this node waits on its own resources
// for a link (a fence, read budget) before it closes the link instead.
type Liveness struct {
	// HeartbeatInterval: an idle link sends a heartbeat this often.
	// Default 1s.
	HeartbeatInterval time.Duration
	// HeartbeatMisses: a link that has received nothing for this many
	// intervals is dead. Default 3.
	HeartbeatMisses int
	// LinkIdleTimeout: a native link this node dialed for traffic (the
	// first Send, Request, Cast, Call or Watch to a node) is closed once
	// it has carried nothing but heartbeats, in either direction, for this
	// long while nothing was pinned to it (calls or requests waiting,
	// watches either way, a pool toward the peer, or one being built).
	// The next message dials a new link; order and accounting hold across
	// the change. Links to seeds kept by this node, to nodes the user
	// Connected to, and to nodes discovery does not list stay open.
	// The package doc (Links) has the whole rule. Default 60s (longer
	// than proxypool's IdleTimeout, so an idle pool goes first);
	// negative: never.
	LinkIdleTimeout time.Duration
	// ForgetNodesAfter: a node name that discovery does not list and that
	// has had no link for this long is forgotten (its table entry, its
	// incarnation and whatever was kept for it). Default 5m.
	ForgetNodesAfter time.Duration
}

// DefaultLiveness returns the liveness defaults.
func DefaultLiveness() Liveness {
	return Liveness{
		HeartbeatInterval: time.Second,
		HeartbeatMisses:   3,
		LinkIdleTimeout:   time.Minute,
		ForgetNodesAfter:  5 * time.Minute,
	}
}

// withDefaults fills the zero fields.
func (l Liveness) withDefaults() Liveness {
	d := DefaultLiveness()
	if l.HeartbeatInterval == 0 {
		l.HeartbeatInterval = d.HeartbeatInterval
	}
	if l.HeartbeatMisses == 0 {
		l.HeartbeatMisses = d.HeartbeatMisses
	}
	if l.LinkIdleTimeout == 0 {
		l.LinkIdleTimeout = d.LinkIdleTimeout
	}
	if l.ForgetNodesAfter == 0 {
		l.ForgetNodesAfter = d.ForgetNodesAfter
	}
	return l
}

// validate checks l after withDefaults.
func (l Liveness) validate() error {
	switch {
	case l.HeartbeatInterval < 0:
		return fmt.Errorf("remote: config: Liveness.HeartbeatInterval is %v, want a positive duration", l.HeartbeatInterval)
	case l.HeartbeatMisses < 1:
		return fmt.Errorf("remote: config: Liveness.HeartbeatMisses is %d, want 1 or more", l.HeartbeatMisses)
	case l.ForgetNodesAfter < 0:
		return fmt.Errorf("remote: config: Liveness.ForgetNodesAfter is %v, want a positive duration", l.ForgetNodesAfter)
	}
	return nil
}

// window is the heartbeat window: a link silent for it is dead, and this
// node waits on its own resources for a link (a fence, read budget) at
// most this long before it closes links instead.
func (l Liveness) window() time.Duration {
	return l.HeartbeatInterval * time.Duration(l.HeartbeatMisses)
}

// window is the heartbeat window of c (Liveness.window).
func (c Config) window() time.Duration { return c.Liveness.window() }
