package remote_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// localWith is testnode.Local with cfg changed by edit first, and a
// proxy pool manager when pools is set.
func localWith(t *testing.T, o testnode.Options, edit func(*remote.Config), pools bool) (*actor.System, *remote.Node, *proxypool.Manager) {
	t.Helper()
	sys, err := actor.Start(actor.Config{Name: o.Name, Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { stopSys(t, sys.Stop) }) // a second Stop is a no-op
	require.NoError(t, testnode.Install(sys))
	o.Cookie = testnode.DefaultCookie
	cfg := testnode.RemoteConfig(o)
	if edit != nil {
		edit(&cfg)
	}
	n, err := remote.Start(ctxT(t, 30*time.Second), sys, cfg)
	require.NoError(t, err)
	var m *proxypool.Manager
	if pools {
		m, err = proxypool.Start(n, proxypool.Config{})
		require.NoError(t, err)
	}
	return sys, n, m
}

// waitedAt is a WaitPeer's result and when it came.
type waitedAt struct {
	waited
	at time.Time
}

func waitPeerTimed(ctx context.Context, n *remote.Node, node string) <-chan waitedAt {
	ch := make(chan waitedAt, 1)
	go func() {
		info, err := n.WaitPeer(ctx, node)
		ch <- waitedAt{waited{info, err}, time.Now()}
	}()
	return ch
}

func stopSys(t *testing.T, stop func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	require.NoError(t, stop(ctx))
}

// deadAddr is a loopback address nothing listens on (a port just freed).
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestASeedRestartedOnANewPortIsCalled: a Static seed that comes back on
// another port dials us; the configured address now refuses, so the one
// its authenticated hello announced is dialled next in the same attempt:
// a WaitPeer blocked through the outage returns the new incarnation
// within one dial of its link to us, the first call after it (one call,
// no retry) reaches the seed, and so does a call over the pool, whose
// links follow the native link's address.
// Mutations caught: connect dialling only the configured address (the
// announced one not kept, or not tried after a failure); dialer.pool
// dialling the configured address instead of the native link's (the
// pool never comes up).
func TestASeedRestartedOnANewPortIsCalled(t *testing.T) {
	b1Sys, b1 := testnode.Local(t, testnode.Options{Name: "b"})
	asys, an, pools := localWith(t, testnode.Options{Name: "a", Seeds: []string{"b=" + b1.Addr()}}, nil, true)
	_, err := an.WaitPeer(ctxT(t, 10*time.Second), "b")
	require.NoError(t, err)
	stopSys(t, b1Sys.Stop)
	eventually(t, "a saw the first b go", func() bool { _, ok := an.Peer("b"); return !ok })

	res := waitPeerTimed(ctxT(t, 30*time.Second), an, "b")
	b2Sys, b2 := testnode.Local(t, testnode.Options{Name: "b", Seeds: []string{"a=" + an.Addr()}})
	ready := time.Now()
	require.NotEqual(t, b1.Addr(), b2.Addr(), "b came back on a new port")
	r := <-res
	require.NoError(t, r.err)
	require.Equal(t, b2Sys.Incarnation(), r.info.Incarnation, "the new incarnation")
	t.Logf("WaitPeer returned %v after the moved seed was ready (it has to dial us first)", r.at.Sub(ready))
	require.Equal(t, b2.Addr(), r.info.Addr, "a reached b at the address its hello gave")

	v, err := asys.Call(ctxT(t, 10*time.Second), "b", "echo", &testpb.Echo{Text: "moved"})
	require.NoError(t, err, "the first call reaches the seed at its new address")
	require.Equal(t, "b", v.(*testpb.Echo).From)
	require.NoError(t, pools.StartConnection(ctxT(t, 20*time.Second), "b"))
	eventually(t, "a's pool to the moved seed", func() bool {
		info := pools.ConnectionInfo("b")
		return info.Status == proxypool.Connected && info.Incarnation == b2Sys.Incarnation()
	})
	v, err = asys.Call(ctxT(t, 10*time.Second), "b", "echo", &testpb.Echo{Text: "pooled"})
	require.NoError(t, err)
	require.Equal(t, "b", v.(*testpb.Echo).From)
}

// TestTheConfiguredSeedAddressWinsOverAnAnnouncedOne: the rule the chaos
// suite's bystander needs. c's seed address for b is b's listener; b
// announces another address (as a node behind a proxy or NAT does, here
// one nothing answers at) in the hello of the link it dials to c. When c
// dials b afterwards it dials the configured address, which answers, and
// never the announced one.
// Mutation caught: register replacing a seed's configured address with a
// hello's (commit e60770f, reverted: the partition and one-way-loss
// scenarios' bystander lost its links).
func TestTheConfiguredSeedAddressWinsOverAnAnnouncedOne(t *testing.T) {
	bAddr := deadAddr(t) // b listens here from its start on
	// ManualConnect: c dials b only when asked, after b's hello is in.
	csys, cn, _ := localWith(t, testnode.Options{Name: "c", Seeds: []string{"b=" + bAddr}}, func(c *remote.Config) { c.ManualConnect = true }, false)
	announced := deadAddr(t)
	b := testnode.Start(t, testnode.Options{Name: "b", Listen: bAddr, Advertise: announced, Seeds: []string{"c=" + cn.Addr()}})
	eventually(t, "b linked to c", func() bool {
		p, ok := cn.Peer("b")
		return ok && p.Incarnation == b.Incarnation
	})
	info, err := cn.WaitPeer(ctxT(t, 10*time.Second), "b")
	require.NoError(t, err, "c dials b's configured address, not the one b announced")
	require.Equal(t, b.Incarnation, info.Incarnation)
	require.Equal(t, bAddr, info.Addr)
	v, err := csys.Call(ctxT(t, 10*time.Second), "b", "echo", &testpb.Echo{Text: "direct"})
	require.NoError(t, err)
	require.Equal(t, "b", v.(*testpb.Echo).From)
}

// TestWaitPeerReturnsSoonAfterAnOutage: a seed down for 3 s (the seed
// keeper's backoff has grown to seconds) comes back on its port without
// dialling us; a WaitPeer blocked through the outage returns within
// 100 ms of the seed's listener being ready, because it dials on its own
// pace (waitPeerRedial, 30 ms), not the keeper's (before: about 700 ms).
// On a loaded machine one restart may be slow for reasons of its own (a
// starved handshake), so the bound holds for the best of three restarts,
// each measured and logged.
// Mutation caught: WaitPeer dialling only once and on discovery events.
func TestWaitPeerReturnsSoonAfterAnOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3 s outage per attempt")
	}
	bSys, b := testnode.Local(t, testnode.Options{Name: "b"})
	addr := b.Addr()
	_, an := testnode.Local(t, testnode.Options{Name: "a", Seeds: []string{"b=" + addr}})
	_, err := an.WaitPeer(ctxT(t, 10*time.Second), "b")
	require.NoError(t, err)
	const bound = 100 * time.Millisecond
	var best time.Duration
	for attempt := range 3 {
		stopSys(t, bSys.Stop)
		eventually(t, "a saw b go", func() bool { _, ok := an.Peer("b"); return !ok })
		res := waitPeerTimed(ctxT(t, 30*time.Second), an, "b")
		outage := time.NewTimer(3 * time.Second)
		select {
		case r := <-res:
			t.Fatalf("WaitPeer returned during the outage: %+v", r)
		case <-outage.C:
		}
		// The port may linger a moment after the close on a busy machine.
		eventually(t, "the port free again", func() bool {
			l, err := net.Listen("tcp", addr)
			if err == nil {
				l.Close()
			}
			return err == nil
		})
		bSys, _ = testnode.Local(t, testnode.Options{Name: "b", Listen: addr})
		ready := time.Now() // its listener is up before Local returns: took may be below 0
		r := <-res
		require.NoError(t, r.err)
		require.Equal(t, bSys.Incarnation(), r.info.Incarnation, "the new incarnation")
		took := r.at.Sub(ready)
		t.Logf("attempt %d: WaitPeer returned %v after the restarted seed was ready (3 s outage)", attempt+1, took)
		if attempt == 0 || took < best {
			best = took
		}
		if best < bound {
			break
		}
	}
	require.Less(t, best, bound, "WaitPeer returns within one dial of the seed being ready")
}
