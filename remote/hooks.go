package remote

import "github.com/mailroom-go/mailroom/discovery"

// Hooks let the layers above (the proxy pool, services) follow what the
// remote layer sees. Every callback runs on a goroutine of the remote
// layer, possibly concurrently with others, and must not block.
type Hooks struct {
	// OnMember: a discovery event, after the node applied it.
	OnMember func(discovery.Event)
	// OnPeer: a native link to a peer incarnation came up.
	OnPeer func(PeerInfo)
	// OnLinkDown: a native link to a peer incarnation closed.
	OnLinkDown func(p PeerInfo, outbound bool)
	// OnPeerGone: a peer incarnation is gone for good.
	OnPeerGone func(PeerInfo)
	// OnAnnounce: a peer announced its draining flag and metadata.
	OnAnnounce func(p PeerInfo, draining bool, meta map[string]string)
}

// SetHooks installs h (replacing earlier hooks).
func (n *Node) SetHooks(h Hooks) { n.hooks.Store(&h) }
