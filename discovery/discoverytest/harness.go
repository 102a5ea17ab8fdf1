package discoverytest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	"github.com/stretchr/testify/require"
)

// Harness is what a provider's tests hand the suite.
type Harness struct {
	// New returns a provider for the node name, not started, with its
	// controls. The suite starts it and stops it when the test ends.
	New func(t *testing.T, name string) Provider
	// TTL is the providers' time to live: a node frozen or killed is
	// reported down by the others within TTL + 1 s. Refresh is how often
	// a node refreshes its liveness; the suite waits a few Refreshes to
	// see that something does not happen.
	TTL, Refresh time.Duration
	// Registered asks the backend about m's incarnation: whether it is
	// registered at all, and whether it is registered as alive.
	Registered func(t testing.TB, m discovery.Member) (registered, alive bool)
	// FrozenStaysRegistered: a node declared dead stays registered, not
	// alive, for a while (Consul keeps a critical check until
	// DeregisterCriticalAfter); false when its registration goes with
	// its liveness (etcd deletes a key with its lease).
	FrozenStaysRegistered bool
	// Disrupt interrupts every watch the nodes run (restart the backend,
	// cut their connections, compact the history) and returns once the
	// backend serves again. Only WatchResume calls it.
	Disrupt func(t *testing.T, nodes []*Node)
}

// Provider is a provider under test with its controls.
type Provider struct {
	discovery.Provider
	// Freeze stops the provider refreshing its liveness, as if the
	// process were frozen; Thaw lets it carry on.
	Freeze, Thaw func()
	// Crash makes Stop skip the deregistration, as a killed process
	// would.
	Crash func()
	// Dead reports whether the provider declared its incarnation dead,
	// and why.
	Dead func() (bool, string)
}

// Node is one started provider, its self and the events it delivered.
type Node struct {
	Name    string
	P       Provider
	Self    discovery.Member
	Rec     *Recorder
	crashed bool
}

// NewMember returns a member named node with a fresh incarnation, an
// address, a pool size and meta.
func NewMember(node string) discovery.Member {
	return discovery.Member{
		Node:        node,
		Incarnation: rand.Uint64() | 1,
		Addr:        fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(20000)),
		PoolWorkers: 1 + rand.IntN(16),
		Meta:        map[string]string{"services": node + "-svc"},
	}
}

// Start makes a provider for name with h.New, starts it as a fresh
// incarnation and stops it when the test ends.
func (h Harness) Start(t *testing.T, name string) *Node {
	t.Helper()
	n := &Node{Name: name, P: h.New(t, name), Self: NewMember(name), Rec: &Recorder{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, n.P.Start(ctx, n.Self, n.Rec.Notify), "%s: Start", name)
	t.Cleanup(func() { n.Stop(t) })
	return n
}

// Stop stops n (deregistering it unless it crashed). Idempotent.
func (n *Node) Stop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.P.Stop(ctx); err != nil && !n.crashed {
		t.Errorf("%s: Stop: %v", n.Name, err)
	}
}

// Crash stops n as a killed process would: no more refreshes, no
// deregistration.
func (n *Node) Crash(t testing.TB) {
	n.crashed = true
	n.P.Crash()
	n.Stop(t)
}
