package proxypool

import (
	"sync/atomic"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestLinkClosedMidBatchDropsWhatFollowsIt: the notice that a proxy's
// link closed can reach it while it is writing, with sends queued behind
// the write (before and after the notice). Every one of them must be
// counted as a dead letter: found by the chaos suite, where a node killed
// under a send flood left thousands of sends neither written nor counted.
func TestLinkClosedMidBatchDropsWhatFollowsIt(t *testing.T) {
	b := startNode(t, "b", nodeOpts{poolSize: 1})
	a := startNode(t, "a", nodeOpts{poolSize: 1, cfg: Config{ManualConnect: true}, seeds: []string{"b=" + b.n.Addr()}})
	h := newHolder()
	t.Cleanup(h.open)
	a.pool.onLink = h.hook
	require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
	waitStatus(t, a.pool, "b", Connected)
	proxy := a.pool.host.Route("b").Proxies()[0]
	var dropped atomic.Int64
	a.sys.SubscribeDeadLetters(func(d actor.DeadLetter) {
		if o, ok := d.Message.(*Outgoing); ok && o.Op() == "send" && o.Node() == "b" {
			dropped.Add(1)
		}
	})

	caller := a.sys.NewSender()
	caller.SendNamed("b", "sink", &testpb.Echo{N: 0}) // the proxy blocks in this write
	eventually(t, "the proxy is held", func() bool { return h.entered.Load() == 1 })
	caller.SendNamed("b", "sink", &testpb.Echo{N: 1})
	require.NoError(t, actorhooks.Inject(a.sys, proxy, linkClosed{})) // what the link watcher sends
	caller.SendNamed("b", "sink", &testpb.Echo{N: 2})
	caller.SendNamed("b", "sink", &testpb.Echo{N: 3})
	eventually(t, "three queued behind the write", func() bool { return a.pool.Stats("b").QueueDepth == 3 })
	h.allow(1)

	eventually(t, "the proxy gone", func() bool { return a.sys.MailboxLen(proxy) == -1 })
	eventually(t, "every send after the write dropped and counted", func() bool { return dropped.Load() == 3 })
	require.Equal(t, uint64(1), a.pool.Stats("b").Messages, "only the first was written")
}
