package clustertest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testutil"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

const ttl = 2 * time.Second

func TestMain(m *testing.M) {
	testnode.SetChildHook(func(sys *actor.System, n *remote.Node, o testnode.Options) error {
		_, err := proxypool.Start(n, proxypool.Config{Eager: true})
		return err
	})
	testnode.MaybeRunChild()
	goleak.VerifyTestMain(m)
}

var serviceSeq atomic.Int64

// service is a fresh Consul service name, so tests sharing the agent do
// not see each other's nodes.
func service() string {
	return fmt.Sprintf("mr-%d-%d", os.Getpid(), serviceSeq.Add(1))
}

// events records one node's discovery events.
type events struct {
	mu  sync.Mutex
	log []timed
}

type timed struct {
	at time.Time
	ev discovery.Event
}

func watchEvents(n *remote.Node) *events {
	e := &events{}
	n.AddHooks(remote.Hooks{OnMember: func(ev discovery.Event) {
		e.mu.Lock()
		e.log = append(e.log, timed{time.Now(), ev})
		e.mu.Unlock()
	}})
	return e
}

// find returns when node's incarnation inc was first reported as typ.
func (e *events) find(typ discovery.EventType, node string, inc uint64) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, x := range e.log {
		if x.ev.Type == typ && x.ev.Member.Node == node && x.ev.Member.Incarnation == inc {
			return x.at, true
		}
	}
	return time.Time{}, false
}

func (e *events) wait(t *testing.T, typ discovery.EventType, node string, inc uint64) time.Time {
	t.Helper()
	var at time.Time
	eventually(t, fmt.Sprintf("%s %s (%016x)", typ, node, inc), func() bool {
		var ok bool
		at, ok = e.find(typ, node, inc)
		return ok
	})
	return at
}

// cluster is a local node "a" and its proxy pool, on Consul.
type cluster struct {
	addr, svc string
	sys       *actor.System
	node      *remote.Node
	pools     *proxypool.Manager
	ev        *events
}

func newCluster(t *testing.T, heartbeat time.Duration) *cluster {
	c := &cluster{addr: consultest.Addr(t), svc: service()}
	c.sys, c.node = testnode.Local(t, testnode.Options{Name: "a", Consul: c.addr, ConsulService: c.svc, TTL: ttl, Heartbeat: heartbeat})
	c.ev = watchEvents(c.node)
	var err error
	c.pools, err = proxypool.Start(c.node, proxypool.Config{Eager: true}) // these tests follow pools through Consul's verdicts
	require.NoError(t, err)
	return c
}

func (c *cluster) child(t *testing.T, name string, heartbeat time.Duration) *testnode.Child {
	return testnode.Start(t, testnode.Options{Name: name, Consul: c.addr, ConsulService: c.svc, TTL: ttl, Heartbeat: heartbeat})
}

// pendingSleeps starts n calls to b's sleep that would take a minute.
func pendingSleeps(t *testing.T, c *cluster, n int) chan error {
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.sys.NewSender().Call(context.Background(), "b", "sleep", &testpb.Sleep{Millis: 60000})
			errs <- err
		}()
	}
	eventually(t, "calls running on b", func() bool {
		v, err := c.sys.Call(context.Background(), "b", "stats", &testpb.Echo{})
		return err == nil && strings.HasSuffix(v.(*testpb.Echo).Text, "sleeping="+strconv.Itoa(n))
	})
	return errs
}

func TestKilledNodeIsGoneWithinTTL(t *testing.T) {
	c := newCluster(t, 0)
	runs := 3
	if s := os.Getenv("MAILROOM_DETECTION_RUNS"); s != "" {
		runs, _ = strconv.Atoi(s)
	}
	var took []time.Duration
	for range runs {
		b := c.child(t, "b", 0)
		c.ev.wait(t, discovery.MemberUp, "b", b.Incarnation)
		require.NoError(t, c.node.Connect(context.Background(), "b", ""))
		errs := pendingSleeps(t, c, 10)
		killed := time.Now()
		b.Kill()
		for range 10 {
			err := <-errs
			require.ErrorIs(t, err, actor.ErrNodeDown)
			require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err))
		}
		at := c.ev.wait(t, discovery.MemberDown, "b", b.Incarnation)
		d := at.Sub(killed)
		took = append(took, d)
		require.Less(t, d, ttl+time.Second, "Consul reports a killed node within TTL + 1 s")
	}
	slices.Sort(took)
	t.Logf("SIGKILL -> Consul MemberDown over %d runs (TTL %v): median %v, max %v, all %v",
		runs, ttl, took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), took)
}

func TestFrozenNodeFailsCallsThroughConsulAndStopsAfterThaw(t *testing.T) {
	// Link heartbeats are a minute: only Consul can notice.
	c := newCluster(t, time.Minute)
	b := c.child(t, "b", time.Minute)
	c.ev.wait(t, discovery.MemberUp, "b", b.Incarnation)
	require.NoError(t, c.node.Connect(context.Background(), "b", ""))
	eventually(t, "a pool to b", func() bool {
		info := c.pools.ConnectionInfo("b")
		return info.Status == proxypool.Connected
	})
	errs := pendingSleeps(t, c, 10)

	stopped := time.Now()
	require.NoError(t, b.Signal(syscall.SIGSTOP))
	var worst time.Duration
	for range 10 {
		err := <-errs
		require.ErrorIs(t, err, actor.ErrNodeDown)
		require.Contains(t, err.Error(), "discovery reports")
		worst = max(worst, time.Since(stopped))
	}
	t.Logf("frozen node: its pending calls failed %v after SIGSTOP (TTL %v), through Consul alone", worst.Round(time.Millisecond), ttl)
	require.Less(t, worst, ttl+time.Second)
	eventually(t, "its pool torn down", func() bool {
		info := c.pools.ConnectionInfo("b")
		return info.Status == proxypool.Down
	})

	// Thawed, it learns it was declared dead and stops itself.
	require.NoError(t, b.Signal(syscall.SIGCONT))
	select {
	case <-b.Exited():
	case <-time.After(15 * time.Second):
		t.Fatal("the thawed node did not stop itself")
	}
	require.Contains(t, b.Stderr(), "declared dead")
	// It never comes back as that incarnation.
	_, up := c.ev.find(discovery.MemberUp, "b", b.Incarnation)
	require.True(t, up)
	require.NotContains(t, upAfterDown(c.ev, "b", b.Incarnation), true)
}

// upAfterDown reports whether inc was reported up again after down.
func upAfterDown(e *events, node string, inc uint64) []bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	down := false
	var out []bool
	for _, x := range e.log {
		if x.ev.Member.Node != node || x.ev.Member.Incarnation != inc {
			continue
		}
		switch x.ev.Type {
		case discovery.MemberDown:
			down = true
		case discovery.MemberUp:
			out = append(out, down)
		}
	}
	return out
}

func TestRestartedNodeIsANewIncarnationWithAFreshPool(t *testing.T) {
	c := newCluster(t, 0)
	b1 := c.child(t, "b", 0)
	c.ev.wait(t, discovery.MemberUp, "b", b1.Incarnation)
	eventually(t, "a pool to b1", func() bool {
		info := c.pools.ConnectionInfo("b")
		return info.Status == proxypool.Connected && info.Incarnation == b1.Incarnation
	})
	master := c.pools.ConnectionInfo("b")
	b1.Kill()
	b2 := c.child(t, "b", 0)
	require.NotEqual(t, b1.Incarnation, b2.Incarnation)
	c.ev.wait(t, discovery.MemberUp, "b", b2.Incarnation)
	eventually(t, "a pool to b2, built by discovery alone", func() bool {
		info := c.pools.ConnectionInfo("b")
		return info.Status == proxypool.Connected && info.Incarnation == b2.Incarnation
	})
	again := c.pools.ConnectionInfo("b")
	require.Equal(t, master.Master, again.Master)
	v, err := c.sys.Call(context.Background(), "b", "echo", &testpb.Echo{Text: "new"})
	require.NoError(t, err)
	require.Equal(t, "echo new", v.(*testpb.Echo).Text)
	require.Zero(t, c.pools.Stats("b").GuardViolations)
	c.ev.wait(t, discovery.MemberDown, "b", b1.Incarnation)
}

func TestGracefulStopDeregistersAndNeverReRegisters(t *testing.T) {
	c := newCluster(t, 0)
	b := c.child(t, "b", 0)
	c.ev.wait(t, discovery.MemberUp, "b", b.Incarnation)
	stopped := time.Now()
	require.NoError(t, b.Stop(15*time.Second))
	at := c.ev.wait(t, discovery.MemberDown, "b", b.Incarnation)
	t.Logf("graceful stop -> MemberDown in %v", at.Sub(stopped).Round(time.Millisecond))
	client := consultest.Client(t, c.addr)
	id := fmt.Sprintf("%s-b-%016x", c.svc, b.Incarnation)
	// The bounded wait is the behaviour under test: it must stay absent.
	deadline := time.Now().Add(2 * ttl)
	for time.Now().Before(deadline) {
		svcs, _, err := client.Catalog().Service(c.svc, "", nil)
		require.NoError(t, err)
		for _, s := range svcs {
			require.NotEqual(t, id, s.ServiceID, "re-registered after a graceful stop")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestAgentRestartLeadsToReRegistration(t *testing.T) {
	agent := consultest.StartAgent(t)
	svc := service()
	sys, node := testnode.Local(t, testnode.Options{Name: "solo", Consul: agent.Addr(), ConsulService: svc, TTL: ttl})
	id := fmt.Sprintf("%s-solo-%016x", svc, sys.Incarnation())
	registered := func() bool {
		svcs, _, err := consultest.Client(t, agent.Addr()).Catalog().Service(svc, "", nil)
		if err != nil {
			return false
		}
		for _, s := range svcs {
			if s.ServiceID == id {
				return true
			}
		}
		return false
	}
	eventually(t, "registered", registered)
	agent.Restart() // a dev agent forgets everything
	eventually(t, "registered again, same incarnation", registered)
	require.False(t, sys.Stopping(), "an agent restart is not a death")
	_ = node
}

// eventually polls cond until it holds (internal/testing/testutil).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, cond)
}
