package proxypool

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testutil"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) {
	// Child nodes run a proxy pool too, unless told not to.
	testnode.SetChildHook(func(sys *actor.System, n *remote.Node, o testnode.Options) error {
		if o.Extra["pool"] == "off" {
			return nil
		}
		m, err := Start(n, Config{Eager: true}) // as the in-process test nodes: pools from the start
		if err != nil {
			return err
		}
		return sys.Register(poolStatusFn, func(_ context.Context, arg proto.Message) (proto.Message, error) {
			info := m.ConnectionInfo(arg.(*testpb.Echo).Text)
			return &testpb.Echo{N: int64(info.Status)}, nil
		})
	})
	testnode.MaybeRunChild()
	goleak.VerifyTestMain(m)
}

// poolStatusFn is a child's function answering Echo{N: Status} of its
// connection to the node named in Text.
const poolStatusFn = "pool_status"

// tnode is an in-process node with a proxy pool.
type tnode struct {
	sys  *actor.System
	n    *remote.Node
	pool *Manager
}

type nodeOpts struct {
	net      remote.Network
	poolSize int
	cfg      Config
	seeds    []string
	inflight int                  // remote.Config.Limits.MaxInflightPerPeer; 0 the default
	tp       trace.TracerProvider // remote.Config.TracerProvider
	// lazy keeps proxypool's default; otherwise the tests' nodes build
	// their pools eagerly (most tests here follow a pool from its build).
	lazy bool
	// mw is the node's actor middleware (actor.Config); nil for none.
	mw *actor.Config
}

func startNode(t testing.TB, name string, o nodeOpts) *tnode {
	t.Helper()
	return startNodeLogged(t, name, o, slog.New(slog.NewTextHandler(testWriter{T: t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// startNodeLogged is startNode with the node's logger.
func startNodeLogged(t testing.TB, name string, o nodeOpts, log *slog.Logger) *tnode {
	t.Helper()
	if !o.lazy {
		o.cfg.Eager = true
	}
	acfg := actor.Config{Name: name, Logger: log}
	if o.mw != nil {
		acfg.ReceiveMiddleware, acfg.SendMiddleware = o.mw.ReceiveMiddleware, o.mw.SendMiddleware
	}
	sys, err := actor.Start(acfg)
	require.NoError(t, err)
	require.NoError(t, testnode.Install(sys))
	n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: testnode.DefaultCookie, Network: o.net, PoolSize: o.poolSize, Seeds: o.seeds, Limits: remote.Limits{MaxInflightPerPeer: o.inflight}, TracerProvider: o.tp})
	require.NoError(t, err)
	m, err := Start(n, o.cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, sys.Stop(ctx))
	})
	return &tnode{sys: sys, n: n, pool: m}
}

// networks are the transports every in-process test body runs over.
var networks = []struct {
	name string
	make func() remote.Network
}{
	{"memnet", func() remote.Network { return memnet.New() }},
	{"tcp", func() remote.Network { return nil }},
}

// eachNetwork runs body once per transport.
func eachNetwork(t *testing.T, body func(t *testing.T, net remote.Network)) {
	for _, nw := range networks {
		t.Run(nw.name, func(t *testing.T) { body(t, nw.make()) })
	}
}

// pair starts a and b on net and links a to b.
func pair(t *testing.T, net remote.Network, bPool int, acfg Config) (a, b *tnode) {
	t.Helper()
	b = startNode(t, "b", nodeOpts{net: net, poolSize: bPool})
	a = startNode(t, "a", nodeOpts{net: net, poolSize: 2, cfg: acfg, seeds: []string{"b=" + b.n.Addr()}})
	require.NoError(t, a.n.Connect(ctxT(t), "b", ""))
	return a, b
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func waitStatus(t testing.TB, m *Manager, node string, want Status) Info {
	t.Helper()
	var info Info
	eventually(t, node+" "+want.String(), func() bool {
		info = m.ConnectionInfo(node)
		return info.Status == want
	})
	return info
}

type testWriter = testutil.TestWriter

// eventually polls cond until it holds (internal/testing/testutil).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, cond)
}
