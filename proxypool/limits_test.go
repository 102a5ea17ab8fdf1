package proxypool

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// TestALazyPoolIsBuiltByTrafficAndTornDownWhenIdle: by default, a linked
// peer gets no pool until a message goes to it; the first goes natively
// and builds one; after IdleTimeout with nothing through it the pool is
// torn down, and the next message builds it again. Per-sender order holds
// across every change of path.
func TestALazyPoolIsBuiltByTrafficAndTornDownWhenIdle(t *testing.T) {
	eachNetwork(t, func(t *testing.T, net remote.Network) {
		b := startNode(t, "b", nodeOpts{net: net, poolSize: 2})
		sink := &orderSink{}
		_, err := b.sys.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return sink }), "order")
		require.NoError(t, err)
		a := startNode(t, "a", nodeOpts{net: net, poolSize: 2, lazy: true, cfg: Config{IdleTimeout: 200 * time.Millisecond}, seeds: []string{"b=" + b.n.Addr()}})
		// The seed link comes up by itself (remote keeps it); no pool.
		eventually(t, "a linked to b", func() bool { _, ok := a.n.Peer("b"); return ok })
		require.Equal(t, NotConnected, a.pool.ConnectionInfo("b").Status, "no traffic, no pool")

		s := a.sys.NewSender()
		next := int64(0)
		send := func(n int) {
			for range n {
				s.SendNamed("b", "order", &testpb.Echo{N: next})
				next++
			}
		}
		send(1)
		require.Equal(t, 2, waitStatus(t, a.pool, "b", Connected).Proxies, "the first message built a pool")
		send(1000)
		eventually(t, "the pool carried sends", func() bool { return a.pool.Stats("b").Messages > 0 })
		eventually(t, "the idle pool torn down", func() bool { return a.pool.ConnectionInfo("b").Status == NotConnected })
		// The master is gone from ConnectionInfo before StopConnection
		// gives its reservation back (after DeleteChild): poll for it.
		eventually(t, "its links given back", func() bool { return a.pool.Summary().ReservedLinks == 0 })
		require.Equal(t, uint64(1), a.pool.Summary().IdleTeardowns)

		send(1000)
		waitStatus(t, a.pool, "b", Connected)
		send(1000)
		eventually(t, "every send delivered", func() bool { return len(sink.snapshot()) == int(next) })
		for i, v := range sink.snapshot() {
			require.Equal(t, int64(i), v, "one sender's order holds across pool, native, teardown and rebuild")
		}
		require.Equal(t, uint64(2), a.pool.Summary().LazyBuilds)
	})
}

// TestThePoolLinkCapKeepsTrafficNative: with MaxPoolLinks 2 and two
// peers whose receiver pools have two workers each, one pool is built;
// the other peer is served natively, the refusal is counted and logged,
// and StartConnection says why.
func TestThePoolLinkCapKeepsTrafficNative(t *testing.T) {
	b := startNode(t, "b", nodeOpts{poolSize: 2})
	c := startNode(t, "c", nodeOpts{poolSize: 2})
	logs := &testutil.LogBuffer{}
	a := startNodeLogged(t, "a", nodeOpts{poolSize: 2, cfg: Config{MaxPoolLinks: 2}, seeds: []string{"b=" + b.n.Addr(), "c=" + c.n.Addr()}},
		slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	eventually(t, "one pool built, one refused", func() bool {
		s := a.pool.Summary()
		return s.Connected == 1 && s.CapRefusals >= 1
	})
	capped := "b"
	if a.pool.ConnectionInfo("b").Status == Connected {
		capped = "c"
	}
	require.Equal(t, NotConnected, a.pool.ConnectionInfo(capped).Status)
	require.Equal(t, 2, a.pool.Summary().PoolLinks)
	v, err := a.sys.Call(ctxT(t), capped, "echo", &testpb.Echo{Text: "x", N: 1})
	require.NoError(t, err, "served natively")
	require.Equal(t, int64(2), v.(*testpb.Echo).N, "the echo counts one up")
	err = a.pool.StartConnection(ctxT(t), capped)
	require.True(t, errors.Is(err, ErrPoolLinkCap), "StartConnection says why: %v", err)
	require.Contains(t, logs.String(), "pool link cap reached")
	require.Contains(t, logs.String(), "peer="+capped)
}
