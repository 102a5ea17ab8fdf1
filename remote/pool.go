package remote

import (
	"errors"

	"github.com/mailroom-go/mailroom/actor"
)

// errPathClosed: the pool a message was routed to has been torn down; the
// caller falls back to the native path.
var errPathClosed = errors.New("remote: pool closed")

// poolPath is a published proxy pool toward one peer incarnation.
type poolPath struct {
	p *peer
}

func (pp *poolPath) Incarnation() uint64 { return pp.p.inc }
func (pp *poolPath) peer() *peer         { return pp.p }

// Enqueue hands el to the proxy that serves sender.
func (pp *poolPath) Enqueue(sender actor.PID, el *Element, pc *pendingCall, block bool) error {
	return errPathClosed
}

// route returns the published pool for node, or nil (native path).
func (n *Node) route(node string) *poolPath { return nil }
