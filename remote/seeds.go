package remote

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
)

// Seed links: with a Static provider, the node keeps a native link to
// every seed (Config.Discovery documents the rule). One keeper goroutine
// per seed dials, waits for the link to close, and dials again; while a
// seed is unreachable it waits seedBackoffMin doubling to seedBackoffMax,
// jittered, between dials, and any news of the seed (a link of it up or
// down, its incarnation gone) dials at once from seedBackoffMin again.
// WaitPeer does not rely on this pace: it dials on its own (ready.go).
const (
	seedBackoffMin = 100 * time.Millisecond
	seedBackoffMax = 5 * time.Second
)

// keepSeeds starts a keeper for every seed of a Static provider but this
// node. It is a no-op for other providers and with ManualConnect.
func (n *Node) keepSeeds() {
	st, ok := n.disc.(*discovery.Static)
	if !ok || n.cfg.ManualConnect {
		return
	}
	wake := map[string]chan struct{}{}
	for _, m := range st.Seeds() {
		if m.Node != n.sys.Name() {
			wake[m.Node] = make(chan struct{}, 1)
		}
	}
	if len(wake) == 0 {
		return
	}
	poke := func(p PeerInfo) {
		if ch := wake[p.Node]; ch != nil {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	// A link closing, an incarnation gone or a seed dialling in (its hello
	// may bring a new address: node.go's register) wakes the keeper, which
	// dials at once with its backoff reset.
	n.AddHooks(Hooks{
		OnPeer:     poke,
		OnLinkDown: func(p PeerInfo, _ bool) { poke(p) },
		OnPeerGone: poke,
	})
	ctx, cancel := context.WithCancel(context.Background())
	n.wg.Add(len(wake) + 1)
	go func() { // the keepers' ctx ends with the node
		defer n.wg.Done()
		<-n.stop
		cancel()
	}()
	for name, ch := range wake {
		go n.keepSeed(ctx, name, ch)
	}
}

// keepSeed keeps a native link to the seed name until the node stops.
func (n *Node) keepSeed(ctx context.Context, name string, wake <-chan struct{}) {
	defer n.wg.Done()
	backoff := seedBackoffMin
	for {
		n.mu.Lock()
		n.slotLocked(name).kept = true // never closed idle (idle.go)
		n.mu.Unlock()
		_, _, err := n.connect(ctx, name)
		var t *time.Timer
		var wait <-chan time.Time
		if err == nil {
			backoff = seedBackoffMin // linked: wait for the link to close
		} else {
			// Jittered in [backoff/2, backoff), so that nodes started
			// together do not dial in step.
			t = time.NewTimer(backoff/2 + rand.N(backoff/2))
			wait = t.C
			backoff = min(2*backoff, seedBackoffMax)
		}
		select {
		case <-ctx.Done():
		case <-wake:
			backoff = seedBackoffMin // news of the seed: the old outage says nothing
		case <-wait:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}
