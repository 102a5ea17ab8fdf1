//go:build chaos

package chaos

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// cluster is the usual cast: a in the test process, b (the victim) and c
// (a bystander that must keep serving) in child processes.
type cluster struct {
	a      *node
	b, c   *testnode.Child
	bCtr   *Counters
	pooled bool
}

// clusterOpts shape a cluster: the path, b's extras, and the heartbeat
// (of every node), and changes to a's remote configuration.
type clusterOpts struct {
	pooled    bool
	bExtra    map[string]string
	heartbeat time.Duration
	misses    int
	aConfig   func(*remote.Config)
	aExtra    map[string]string // Equip's extras for a
}

func newCluster(t *testing.T, o clusterOpts) *cluster {
	t.Helper()
	extra := map[string]string{}
	if !o.pooled {
		extra[ExtraPool] = "off"
	}
	for k, v := range o.bExtra {
		extra[k] = v
	}
	cl := &cluster{pooled: o.pooled}
	cl.b, cl.bCtr = startChild(t, testnode.Options{Name: "b", Extra: extra, Heartbeat: o.heartbeat, Misses: o.misses})
	cl.c, _ = startChild(t, testnode.Options{Name: "c", Extra: map[string]string{ExtraPool: extra[ExtraPool]}, Heartbeat: o.heartbeat, Misses: o.misses})
	rc := remote.Config{Seeds: []string{cl.b.Seed(), cl.c.Seed()}, Liveness: remote.Liveness{HeartbeatInterval: o.heartbeat, HeartbeatMisses: o.misses}}
	if o.aConfig != nil {
		o.aConfig(&rc)
	}
	aExtra := map[string]string{ExtraPool: extra[ExtraPool]}
	for k, v := range o.aExtra {
		aExtra[k] = v
	}
	cl.a = startLocal(t, "a", rc, aExtra)
	for _, n := range []string{"b", "c"} {
		require.NoError(t, cl.a.n.Connect(ctxFor(t, 10*time.Second), n, ""))
		if o.pooled {
			cl.waitPool(t, n)
		}
	}
	return cl
}

// waitPool waits until a's pool to node is up for node's current
// incarnation.
func (cl *cluster) waitPool(t testing.TB, node string) { waitPoolOf(t, cl.a, node) }

// running is how many sleep calls node reports running.
func running(sys *actor.System, node string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := sys.Call(ctx, node, "stats", &testpb.Echo{})
	if err != nil {
		return -1
	}
	_, s, _ := strings.Cut(v.(*testpb.Echo).Text, "sleeping=")
	n, _ := strconv.Atoi(s)
	return n
}

func pathName(pooled bool) string {
	if pooled {
		return "pooled"
	}
	return "native"
}

// TestKillDuringInflightCalls: 1,000 calls are running on b when it gets
// SIGKILL. Every one must end at once with ErrNodeDown (may have
// executed), none may hang, and c must keep answering.
func TestKillDuringInflightCalls(t *testing.T) {
	for _, pooled := range []bool{true, false} {
		t.Run(pathName(pooled), func(t *testing.T) { killCalls(t, pooled) })
	}
}

func killCalls(t *testing.T, pooled bool) {
	const calls = 1000
	sc := newScenario(t, "kill-calls-"+pathName(pooled))
	cl := newCluster(t, clusterOpts{pooled: pooled})
	a := cl.a
	probe := startProber(t, a.sys, "c", 10*time.Millisecond)
	rss0 := selfRSS()
	before := a.n.Stats()

	results := startCalls(a.sys, calls, "b", "sleep", func(int) proto.Message { return &testpb.Sleep{Millis: 60_000} })
	eventually(t, 60*time.Second, "every call running on b", func() bool { return running(a.sys, "b") == calls })
	killed := time.Now()
	cl.b.Kill()
	got, hung := collect(results, calls, 30*time.Second)

	cls := newClasses()
	var worst time.Duration
	for _, c := range got {
		cls.add(c.err)
		worst = max(worst, c.end.Sub(killed))
	}
	_, err := a.sys.Call(ctxFor(t, 10*time.Second), "c", "echo", &testpb.Echo{Text: "after"})
	require.NoError(t, err, "c serves after b died")
	probe.halt()
	after := a.n.Stats()

	sc.set("calls_in_flight", calls)
	sc.set("ended", len(got))
	sc.set("hung", hung)
	sc.set("failed_within_ms", worst)
	sc.set("classes", cls.String())
	sc.set("may_have_executed", cls.byOut[actor.MayHaveExecuted])
	sc.set("failed_by_liveness", after.FailedByLiveness-before.FailedByLiveness)
	sc.set("bystander_ok", probe.ok.Load())
	sc.set("bystander_failed", probe.failed.Load())
	sc.set("rss_start_mib", MiB(rss0))
	sc.set("rss_end_mib", MiB(selfRSS()))

	require.Zero(t, hung, "calls that never ended")
	require.Empty(t, cls.wrong, "errors of the wrong class")
	require.Equal(t, calls, cls.get("node_down"), "every call: node down (%s)", cls)
	require.Less(t, worst, 5*time.Second, "calls fail the moment the incarnation is gone")
	require.Zero(t, probe.failed.Load(), "the bystander kept serving: %v", probe.err())
}
