package discovery

import (
	"context"
	"fmt"
	"strconv"

	"github.com/mailroom-go/mailroom/actor"
)

// Member is one node incarnation as discovery sees it.
type Member struct {
	// Node is the node name, unique in the cluster.
	Node string
	// Incarnation is drawn at every node start. 0 means "not known yet":
	// a static seed before its first handshake.
	Incarnation uint64
	// Addr is host:port of the node's remote listener.
	Addr string
	// PoolWorkers is the number of workers in the node's receiver pool,
	// as it advertises them (others build one proxy per worker toward
	// it); NoReceiverPool when it runs none. Not remote.Config.PoolSize,
	// whose 0 means the default (GOMAXPROCS).
	PoolWorkers int
	// Draining is set while the node stops gracefully: it refuses new calls.
	Draining bool
	// Meta carries what the upper layers announce (services, versions).
	// Keys and values are short strings.
	Meta map[string]string
}

// NoReceiverPool as Member.PoolWorkers (and remote.PeerInfo.PoolWorkers):
// the node runs no receiver pool (remote.PoolDisabled); others reach it on
// the native path only.
const NoReceiverPool = 0

// ID is the stable identity of one incarnation: "node/incarnation-hex".
func (m Member) ID() string { return m.Node + "/" + actor.FormatIncarnation(m.Incarnation) }

func (m Member) String() string {
	return fmt.Sprintf("%s (incarnation %016x) at %s pool=%d draining=%v", m.Node, m.Incarnation, m.Addr, m.PoolWorkers, m.Draining)
}

// EventType says what happened to a member.
type EventType int

const (
	// MemberUp: an incarnation is alive (registered and passing).
	MemberUp EventType = iota + 1
	// MemberUpdated: a live incarnation changed its Draining flag or Meta.
	MemberUpdated
	// MemberDown: the incarnation is gone for good (its health check went
	// critical, or it was deregistered). The same incarnation is never
	// reported up again, even if its check passes later.
	MemberDown
)

func (t EventType) String() string {
	switch t {
	case MemberUp:
		return "up"
	case MemberUpdated:
		return "updated"
	case MemberDown:
		return "down"
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// Event is one change of membership.
type Event struct {
	Type   EventType
	Member Member
}

// Provider tells the runtime which node incarnations are in the cluster.
//
// Contract:
//   - Start registers self and starts watching. notify is called from one
//     goroutine owned by the provider, one event at a time, in order; it
//     must not block for long. Events about self are delivered too: a
//     MemberDown for self's incarnation means the cluster declared this
//     node dead (e.g. it was frozen past its TTL) and it must stop.
//   - Update republishes self (Draining, Meta). Safe concurrently with the
//     watch.
//   - Stop first stops refreshing self's health, then deregisters, then
//     stops watching and waits for the notify goroutine to exit. It never
//     re-registers afterwards. Idempotent.
type Provider interface {
	Start(ctx context.Context, self Member, notify func(Event)) error
	Update(ctx context.Context, self Member) error
	Stop(ctx context.Context) error
}
