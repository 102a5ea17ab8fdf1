package metrics

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/mailroom-go/mailroom/services"
	"github.com/mailroom-go/mailroom/supervisor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// tnode is an in-process node over TCP with a proxy pool.
type tnode struct {
	sys  *actor.System
	n    *remote.Node
	pool *proxypool.Manager
	stop func() // stops it now (also done at cleanup)
}

func startNode(t testing.TB, name string, seeds ...string) *tnode {
	t.Helper()
	sys, err := actor.Start(actor.Config{Name: name, Logger: slog.New(slog.NewTextHandler(testutil.TestWriter{T: t}, &slog.HandlerOptions{Level: slog.LevelError}))})
	require.NoError(t, err)
	require.NoError(t, testnode.Install(sys))
	cfg := remote.Config{Cookie: testnode.DefaultCookie, Listen: "127.0.0.1:0", PoolSize: 2}
	if len(seeds) > 0 {
		d, err := discovery.NewStatic(seeds...)
		require.NoError(t, err)
		cfg.Discovery = d
	}
	n, err := remote.Start(context.Background(), sys, cfg)
	require.NoError(t, err)
	m, err := proxypool.Start(n, proxypool.Config{})
	require.NoError(t, err)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			require.NoError(t, sys.Stop(ctx))
		})
	}
	t.Cleanup(stop)
	return &tnode{sys: sys, n: n, pool: m, stop: stop}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// scrape fetches url's exposition and parses it; it also lints it with
// promlint, which must find nothing.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	problems, err := promlint.New(strings.NewReader(string(body))).Lint()
	require.NoError(t, err)
	require.Empty(t, problems, "promlint")
	// No family uses a label a scrape configuration sets on its targets
	// (Prometheus would rename ours exported_<name>), and every series
	// says which node it is from.
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			nodes := 0
			for _, l := range m.GetLabel() {
				require.NotContains(t, []string{"node", "instance", "job"}, l.GetName(), "%s has a target label", name)
				if l.GetName() == DefaultNodeLabel {
					nodes++
				}
			}
			require.Equal(t, 1, nodes, "%s: one %s label: %v", name, DefaultNodeLabel, m.GetLabel())
		}
	}
	return mfs
}

// value is the value of family name's series with exactly labels (name,
// value pairs) besides mailroom_node, unless labels name mailroom_node
// too; ok is false when there is no such series.
func value(mfs map[string]*dto.MetricFamily, name string, labels ...string) (v float64, ok bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	_, node := want[DefaultNodeLabel]
next:
	for _, m := range mf.GetMetric() {
		have := 0
		for _, l := range m.GetLabel() {
			if l.GetName() == DefaultNodeLabel && !node {
				continue
			}
			have++
			if w, ok := want[l.GetName()]; !ok || w != l.GetValue() {
				continue next
			}
		}
		if have != len(want) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func mustValue(t testing.TB, mfs map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	v, ok := value(mfs, name, labels...)
	require.True(t, ok, "no series %s%v", name, labels)
	return v
}

// TestScrapeEveryLayer: two linked nodes under a little of everything; a
// scrape through promhttp shows each layer's figures, and promlint finds
// no problem in the exposition.
func TestScrapeEveryLayer(t *testing.T) {
	b := startNode(t, "b")
	a := startNode(t, "a", "b="+b.n.Addr())
	svc, err := services.Start(ctxT(t), a.n, services.Config{})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	require.NoError(t, Register(reg, a.n, WithPools(a.pool), WithServices(svc), WithSampleAge(0)))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	// Pools both ways, asked for (pools may be lazy): a's toward b and
	// b's toward a, two workers each.
	testutil.Eventually(t, "a linked to b", func() bool { _, ok := a.n.Peer("b"); return ok })
	require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
	require.NoError(t, b.pool.StartConnection(ctxT(t), "a"))
	testutil.Eventually(t, "the pools both ways", func() bool {
		return a.pool.ConnectionInfo("b").Status == proxypool.Connected && b.pool.ConnectionInfo("a").Status == proxypool.Connected
	})

	before := scrape(t, srv.URL)
	spawns0 := mustValue(t, before, "mailroom_actor_spawns_total")
	framesOut0 := mustValue(t, before, "mailroom_remote_frames_total", "direction", "out")

	// A supervised child that crashes once and is restarted.
	crashes := actor.PropsFromFunc(func(c *actor.Context) {
		if c.Message() == "crash" {
			panic("crash on purpose")
		}
	})
	sup, err := supervisor.StartNamed(a.sys, supervisor.Spec{Children: []supervisor.ChildSpec{{ID: "worker", Props: crashes}}}, "app")
	require.NoError(t, err)
	kids, err := supervisor.WhichChildren(ctxT(t), a.sys, sup)
	require.NoError(t, err)
	a.sys.Send(kids[0].PID, "crash")
	testutil.Eventually(t, "the worker restarted", func() bool {
		kids, err := supervisor.WhichChildren(ctxT(t), a.sys, sup)
		return err == nil && len(kids) == 1 && kids[0].Restarts == 1 && !kids[0].PID.IsZero()
	})

	// Pooled calls; failures of each outcome we can cause at will; one
	// call left pending.
	for range 20 {
		_, err := a.sys.Call(ctxT(t), "b", "echo", &testpb.Echo{Text: "hi"})
		require.NoError(t, err)
	}
	_, err = a.sys.Call(ctxT(t), "b", "no_such_function", &testpb.Echo{})
	require.ErrorIs(t, err, actor.ErrNoFunction)
	_, err = a.sys.Call(ctxT(t), "b", "reject", &testpb.Echo{Text: "no"})
	require.Error(t, err)
	pendingCtx, cancelPending := context.WithCancel(context.Background())
	callDone := make(chan struct{})
	go func() {
		defer close(callDone)
		_, _ = a.sys.Call(pendingCtx, "b", "sleep", &testpb.Sleep{Millis: 60_000})
	}()
	t.Cleanup(func() { cancelPending(); <-callDone })

	// A dead letter: a send to an actor that is gone.
	gone, err := a.sys.SpawnFunc(func(*actor.Context) {})
	require.NoError(t, err)
	require.NoError(t, a.sys.StopActorWait(ctxT(t), gone))
	a.sys.Send(gone, "late")

	// A stuck actor with a backlog of 50.
	gate := make(chan struct{})
	stuck, err := a.sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if c.Message() == "block" {
			<-gate
		}
	}), "stuck")
	require.NoError(t, err)
	t.Cleanup(func() { close(gate) })
	for range 50 {
		a.sys.Send(stuck, "block")
	}
	testutil.Eventually(t, "the pending call", func() bool {
		for _, p := range a.n.Pending() {
			if p.Node == "b" && p.Count == 1 {
				return true
			}
		}
		return false
	})

	mfs := scrape(t, srv.URL)
	inc := actor.FormatIncarnation(a.sys.Incarnation())
	binc := actor.FormatIncarnation(b.sys.Incarnation())

	// The node and its actors.
	require.Equal(t, 1.0, mustValue(t, mfs, "mailroom_node_info", "mailroom_node", "a", "incarnation", inc))
	require.Equal(t, float64(a.sys.NumActors()), mustValue(t, mfs, "mailroom_actors"))
	require.GreaterOrEqual(t, mustValue(t, mfs, "mailroom_actor_spawns_total")-spawns0, 4.0) // app, worker twice, gone, stuck
	require.Equal(t, 1.0, mustValue(t, mfs, "mailroom_actor_restarts_total"))
	require.Equal(t, 1.0, mustValue(t, mfs, "mailroom_actor_crashes_total"))
	require.GreaterOrEqual(t, mustValue(t, mfs, "mailroom_actor_dead_letters_total", "reason", "no_process"), 1.0)
	for _, r := range []string{"mailbox_full", "unreachable", "stopped", "other"} {
		mustValue(t, mfs, "mailroom_actor_dead_letters_total", "reason", r) // present, whatever its value
	}
	require.GreaterOrEqual(t, mustValue(t, mfs, "mailroom_call_failures_total", "outcome", "not_executed"), 1.0)
	require.GreaterOrEqual(t, mustValue(t, mfs, "mailroom_call_failures_total", "outcome", "executed"), 1.0)
	mustValue(t, mfs, "mailroom_call_failures_total", "outcome", "may_have_executed")

	// The mailbox histogram: every actor once; the stuck one's 49 or 50
	// in the bucket up to 63, the deepest of rank 1.
	h := mfs["mailroom_actor_mailbox_depth"].GetMetric()[0].GetHistogram()
	require.Equal(t, uint64(a.sys.NumActors()), h.GetSampleCount())
	require.GreaterOrEqual(t, h.GetSampleSum(), 49.0)
	var le31, le63 uint64
	for _, bk := range h.GetBucket() {
		switch bk.GetUpperBound() {
		case 31:
			le31 = bk.GetCumulativeCount()
		case 63:
			le63 = bk.GetCumulativeCount()
		}
	}
	require.Equal(t, uint64(1), le63-le31, "one mailbox in (31, 63]")
	deepest := mustValue(t, mfs, "mailroom_actor_mailbox_deepest", "rank", "1")
	require.GreaterOrEqual(t, deepest, 49.0)
	require.LessOrEqual(t, deepest, 50.0)
	require.Len(t, mfs["mailroom_actor_mailbox_deepest"].GetMetric(), deepestRanks)

	// Remote: the links to b, traffic, calls by path, the pending call.
	require.Equal(t, 1.0, mustValue(t, mfs, "mailroom_remote_peers"))
	require.GreaterOrEqual(t, mustValue(t, mfs, "mailroom_remote_links", "peer", "b", "kind", "native", "state", "active"), 1.0)
	// Pool links: a's pool toward b (2 workers) and b's toward a.
	require.Equal(t, 4.0, mustValue(t, mfs, "mailroom_remote_links", "peer", "b", "kind", "pool", "state", "active"))
	require.Equal(t, 0.0, mustValue(t, mfs, "mailroom_remote_peer_draining", "peer", "b"))
	require.Greater(t, mustValue(t, mfs, "mailroom_remote_frames_total", "direction", "out"), framesOut0)
	require.Greater(t, mustValue(t, mfs, "mailroom_remote_frames_total", "direction", "in"), 0.0)
	require.Greater(t, mustValue(t, mfs, "mailroom_remote_bytes_total", "direction", "out"), 0.0)
	require.GreaterOrEqual(t, mustValue(t, mfs, "mailroom_remote_messages_sent_total", "op", "call", "path", "pooled"), 20.0)
	require.Equal(t, 1.0, mustValue(t, mfs, "mailroom_remote_pending_calls", "peer", "b", "incarnation", binc))
	require.Greater(t, mustValue(t, mfs, "mailroom_remote_pending_oldest_seconds", "peer", "b", "incarnation", binc), 0.0)
	require.Equal(t, 0.0, mustValue(t, mfs, "mailroom_remote_liveness_verdicts_total", "verdict", "link_silent"))
	require.Equal(t, 0.0, mustValue(t, mfs, "mailroom_remote_liveness_verdicts_total", "verdict", "link_idle"))
	mustValue(t, mfs, "mailroom_remote_heartbeats_missed_total")

	// The pool toward b: 20 calls went in batches.
	bh := mfs["mailroom_pool_batch_size"]
	require.NotNil(t, bh)
	require.Len(t, bh.GetMetric(), 1)
	ph := bh.GetMetric()[0].GetHistogram()
	require.Positive(t, ph.GetSampleCount())
	require.GreaterOrEqual(t, ph.GetSampleSum(), 20.0)
	require.Equal(t, 2.0, mustValue(t, mfs, "mailroom_pool_proxies", "peer", "b"))
	require.Equal(t, 0.0, mustValue(t, mfs, "mailroom_pool_guard_violations_total", "peer", "b"))
	mustValue(t, mfs, "mailroom_pool_queue_depth", "peer", "b")
	mustValue(t, mfs, "mailroom_pool_dropped_total", "peer", "b")
	// The pools as a whole: one master, connected, 2 links.
	require.Equal(t, 1.0, mustValue(t, mfs, "mailroom_pool_masters"))
	require.Equal(t, 1.0, mustValue(t, mfs, "mailroom_pool_connected"))
	require.Equal(t, 2.0, mustValue(t, mfs, "mailroom_pool_links"))
	require.Equal(t, 2.0, mustValue(t, mfs, "mailroom_pool_reserved_links"))
	mustValue(t, mfs, "mailroom_pool_lazy_builds_total")
	mustValue(t, mfs, "mailroom_pool_idle_teardowns_total")
	mustValue(t, mfs, "mailroom_pool_cap_refusals_total")

	// Discovery: b is a seed, listed up.
	require.Equal(t, 1.0, mustValue(t, mfs, "mailroom_discovery_members"))
	require.GreaterOrEqual(t, mustValue(t, mfs, "mailroom_discovery_events_total", "type", "up"), 1.0)

	// Services' collector came along.
	mustValue(t, mfs, "mailroom_services_drain_acks_total", "direction", "sent")
}

// TestRegisterRefusals: bad arguments, and a second registration of the
// same families on one registry, are errors that leave the registry as it
// was.
func TestRegisterRefusals(t *testing.T) {
	a := startNode(t, "a")
	reg := prometheus.NewRegistry()
	require.Error(t, Register(nil, a.n))
	require.Error(t, Register(reg, nil))
	require.NoError(t, Register(reg, a.n))
	require.Error(t, Register(reg, a.n))
	// A registry that already has services' families refuses
	// WithServices; ours is withdrawn too.
	svc, err := services.Start(ctxT(t), a.n, services.Config{})
	require.NoError(t, err)
	reg2 := prometheus.NewRegistry()
	require.NoError(t, reg2.Register(svc.Collector()))
	require.Error(t, Register(reg2, a.n, WithServices(svc)))
	mfs, err := reg2.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		require.True(t, strings.HasPrefix(mf.GetName(), "mailroom_services_"), "left registered: %s", mf.GetName())
	}
}

// TestTwoNodesOneRegistry: two nodes of one process on one registry,
// each family's series told apart by the mailroom_node label every family
// carries.
func TestTwoNodesOneRegistry(t *testing.T) {
	a, b := startNode(t, "a"), startNode(t, "b")
	reg := prometheus.NewRegistry()
	require.NoError(t, Register(reg, a.n))
	require.NoError(t, Register(reg, b.n, WithPools(b.pool)))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	mfs := scrape(t, srv.URL)
	for _, n := range []*tnode{a, b} {
		inc := actor.FormatIncarnation(n.sys.Incarnation())
		require.Equal(t, 1.0, mustValue(t, mfs, "mailroom_node_info", "mailroom_node", n.sys.Name(), "incarnation", inc))
		require.Equal(t, float64(n.sys.NumActors()), mustValue(t, mfs, "mailroom_actors", "mailroom_node", n.sys.Name()))
	}
	require.Len(t, mfs["mailroom_call_failures_total"].GetMetric(), 6, "3 outcomes × 2 nodes")
}

// TestNodeLabel: WithNodeLabel renames the node label on every family,
// or with "" leaves it on mailroom_node_info only; a label that is not
// valid, or that a family uses already, is refused and registers nothing.
func TestNodeLabel(t *testing.T) {
	a := startNode(t, "a")
	gather := func(reg *prometheus.Registry) map[string]*dto.MetricFamily {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		out := map[string]*dto.MetricFamily{}
		for _, mf := range mfs {
			out[mf.GetName()] = mf
		}
		return out
	}
	labelsOf := func(m *dto.Metric) map[string]string {
		out := map[string]string{}
		for _, l := range m.GetLabel() {
			out[l.GetName()] = l.GetValue()
		}
		return out
	}
	inc := actor.FormatIncarnation(a.sys.Incarnation())

	reg := prometheus.NewRegistry()
	require.NoError(t, Register(reg, a.n, WithNodeLabel("mailroom_instance")))
	mfs := gather(reg)
	require.Equal(t, map[string]string{"mailroom_instance": "a", "incarnation": inc}, labelsOf(mfs["mailroom_node_info"].GetMetric()[0]))
	require.Equal(t, map[string]string{"mailroom_instance": "a"}, labelsOf(mfs["mailroom_actors"].GetMetric()[0]))

	reg = prometheus.NewRegistry()
	require.NoError(t, Register(reg, a.n, WithNodeLabel("")))
	mfs = gather(reg)
	require.Equal(t, map[string]string{DefaultNodeLabel: "a", "incarnation": inc}, labelsOf(mfs["mailroom_node_info"].GetMetric()[0]))
	require.Empty(t, labelsOf(mfs["mailroom_actors"].GetMetric()[0]))

	for _, bad := range []string{"peer", "outcome", "bad-name", "__name__", "0node"} {
		reg := prometheus.NewRegistry()
		require.Error(t, Register(reg, a.n, WithNodeLabel(bad)), bad)
		mfs := gather(reg)
		require.Empty(t, mfs, "%s: nothing registered", bad)
	}
}
