//go:build chaos

package chaos

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// TestConsulAgentRestartUnderLoad: the Consul agent every node uses is
// restarted (a dev agent: it comes back empty) while a floods b and d's
// callers call it. An agent restart is not a death: no call fails, no
// send is dropped or lost, no incarnation is reported down or stops
// itself, and every node registers again, same incarnation.
func TestConsulAgentRestartUnderLoad(t *testing.T) {
	const ttl = 2 * time.Second
	sc := newScenario(t, "consul-agent-restart")
	agent := consultest.StartAgent(t)
	svc := fmt.Sprintf("chaos-%d", os.Getpid())
	opts := func(name string) testnode.Options {
		return testnode.Options{Name: name, Consul: agent.Addr(), ConsulService: svc, TTL: ttl, Extra: floodSinkExtra()}
	}
	b, bCtr := startChild(t, opts("b"))
	local := func(name string) *node {
		rc, err := testnode.RemoteConfigWith(opts(name), actor.DiscardLogger())
		require.NoError(t, err)
		return startLocal(t, name, rc, nil)
	}
	a, d := local("a"), local("d")
	var downs atomic.Int64
	for _, x := range []*node{a, d} {
		x.n.AddHooks(remote.Hooks{OnMember: func(ev discovery.Event) {
			if ev.Type == discovery.MemberDown {
				downs.Add(1)
			}
		}})
	}
	waitPoolOf(t, a, "b")
	waitPoolOf(t, d, "b")
	led := openLedger(a, "b")
	f := startFlood(t, a.sys, 500, 0, func(i int) (string, string) { return "b", SinkName(i % floodSinks) })
	var calls callLog
	stop, callers := startCallers(t, d.sys, 10, "b", &calls)
	eventually(t, 30*time.Second, "the flood under way", func() bool { return bCtr.Load(Delivered) >= 20_000 })

	restartAt := time.Now()
	agent.Restart()
	restarted := time.Since(restartAt)
	client := consultest.Client(t, agent.Addr())
	eventually(t, 30*time.Second, "every node registered again", func() bool {
		svcs, _, err := client.Catalog().Service(svc, "", nil)
		return err == nil && len(svcs) == 3
	})
	reregistered := time.Since(restartAt)
	// Past the observers' grace (2 x TTL) with the load on: nobody may be
	// declared dead late.
	eventually(t, 30*time.Second, "the grace period", func() bool { return time.Since(restartAt) > 3*ttl })
	stop()
	callersDone := waitGroupWithin(callers, 30*time.Second)
	hung := f.halt(30 * time.Second)
	bk := led.close(t, f.attempted())
	delivered := settle(t, 30*time.Second, 300*time.Millisecond, func() int64 { return bCtr.Load(Delivered) })
	cls := newClasses()
	for _, c := range calls.calls {
		cls.add(c.err)
	}
	peer, _ := a.n.Peer("b")
	bAlive := true
	select {
	case <-b.Exited():
		bAlive = false
	default:
	}

	sc.set("agent_restart_ms", restarted)
	sc.set("reregistered_after_ms", reregistered)
	sc.set("calls", len(calls.calls))
	sc.set("classes", cls.String())
	sc.set("member_down_events", downs.Load())
	sc.set("b_alive_same_incarnation", bAlive && peer.Incarnation == b.Incarnation)
	bk.record(sc)
	sc.set("delivered", delivered)
	sc.set("lost", bk.written-delivered-bCtr.Load(DeadLetters))
	sc.set("out_of_order", bCtr.Load(OutOfOrder))
	sc.set("writers_hung", hung)

	require.True(t, callersDone)
	require.Equal(t, len(calls.calls), cls.get("ok"), "an agent restart failed calls: %s", cls)
	require.Zero(t, downs.Load(), "an incarnation was reported down")
	require.True(t, bAlive, "b stopped itself")
	require.Equal(t, b.Incarnation, peer.Incarnation)
	require.False(t, a.sys.Stopping() || d.sys.Stopping(), "a node stopped itself")
	require.Zero(t, hung)
	bk.check(t)
	require.Zero(t, bk.refused+bk.proxyDropped+bk.unsent, "sends dropped")
	require.Equal(t, bk.written, delivered, "every send delivered")
	require.Zero(t, bCtr.Load(OutOfOrder))
}
