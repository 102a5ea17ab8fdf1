package remote

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
)

// Seed links: the node keeps a native link to every seed (Config.Discovery
// documents the rule). A seed is a member discovery lists with no
// incarnation (0): every seed of a Static provider, for as long as the
// node runs, and a member of another provider that reports it so (DNS),
// for as long as it is listed. One keeper goroutine per seed dials, waits
// for the link to close, and dials again; while a seed is unreachable it
// waits seedBackoffMin doubling to seedBackoffMax, jittered, between
// dials, and any news of the seed (a link of it up or down, its
// incarnation gone) dials at once from seedBackoffMin again. WaitPeer
// does not rely on this pace: it dials on its own (ready.go).
const (
	seedBackoffMin = 100 * time.Millisecond
	seedBackoffMax = 5 * time.Second
)

// seedKeepers is the node's set of seed keepers.
type seedKeepers struct {
	n   *Node
	ctx context.Context // ends with the node

	mu   sync.Mutex // protects following
	keep map[string]*seedKeeper
}

type seedKeeper struct {
	wake   chan struct{} // one slot: news of the seed
	cancel context.CancelFunc
}

// keepSeeds starts a keeper for every seed of a Static provider but
// node, and for other providers follows the members they list with
// Incarnation 0 (a keeper while listed). Nothing with ManualConnect.
func keepSeeds(n *Node) {
	if n.cfg.ManualConnect {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &seedKeepers{n: n, ctx: ctx, keep: map[string]*seedKeeper{}}
	n.wg.Add(1)
	go func() { // the keepers' ctx ends with the node
		defer n.wg.Done()
		<-n.stop
		k.mu.Lock()
		cancel() // under mu: no keeper is added (n.wg.Add) after
		k.mu.Unlock()
	}()
	// A link closing, an incarnation gone or a seed dialling in (its hello
	// may bring a new address: node.go's register) wakes the keeper, which
	// dials at once with its backoff reset.
	hooks := Hooks{
		OnPeer:     func(p PeerInfo) { k.poke(p.Node) },
		OnLinkDown: func(p PeerInfo, _ bool) { k.poke(p.Node) },
		OnPeerGone: func(p PeerInfo) { k.poke(p.Node) },
	}
	if st, ok := n.disc.(*discovery.Static); ok {
		n.AddHooks(hooks)
		for _, m := range st.Seeds() {
			if m.Node != n.sys.Name() {
				k.add(m.Node, false)
			}
		}
		return
	}
	hooks.OnMember = func(ev discovery.Event) {
		switch {
		case ev.Member.Incarnation != 0:
		case ev.Type == discovery.MemberDown:
			k.remove(ev.Member.Node)
		default:
			k.add(ev.Member.Node, true)
		}
	}
	n.AddHooks(hooks)
	// What discovery listed before the hook was in. add checks the slot
	// is still listed, so a member withdrawn meanwhile gets no keeper.
	for _, m := range n.Members() {
		if m.Incarnation == 0 {
			k.add(m.Node, true)
		}
	}
}

// add starts a keeper for name unless one runs, the node stops, or (when
// listed is set) discovery no longer lists name.
func (k *seedKeepers) add(name string, listed bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ctx.Err() != nil || k.keep[name] != nil {
		return
	}
	if listed {
		k.n.mu.Lock()
		s := k.n.slots[name]
		ok := s != nil && s.marks.Listed()
		k.n.mu.Unlock()
		if !ok {
			return
		}
	}
	ctx, cancel := context.WithCancel(k.ctx)
	sk := &seedKeeper{wake: make(chan struct{}, 1), cancel: cancel}
	k.keep[name] = sk
	k.n.wg.Add(1)
	go k.run(ctx, name, sk.wake)
}

// remove stops name's keeper: discovery withdrew the seed. A link that
// is up stays up; its heartbeats judge it.
func (k *seedKeepers) remove(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if sk := k.keep[name]; sk != nil {
		sk.cancel()
		delete(k.keep, name)
	}
}

func (k *seedKeepers) poke(name string) {
	k.mu.Lock()
	sk := k.keep[name]
	k.mu.Unlock()
	if sk != nil {
		select {
		case sk.wake <- struct{}{}:
		default:
		}
	}
}

// run keeps a native link to the seed name until ctx ends.
func (k *seedKeepers) run(ctx context.Context, name string, wake <-chan struct{}) {
	n := k.n
	defer n.wg.Done()
	backoff := seedBackoffMin
	for {
		n.mu.Lock()
		n.slotLocked(name).markKept() // never closed idle (idle.go)
		n.mu.Unlock()
		_, _, err := n.dial.connect(ctx, name)
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
