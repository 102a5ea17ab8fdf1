package router_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/router"
	"github.com/stretchr/testify/require"
)

// A routee in another process, killed with SIGKILL while requests routed
// to it are pending: each fails as may have executed within the liveness
// window, the router removes the routee, and the next request goes to
// the routee that is left.
func TestSIGKILLedRemoteRouteeIsRemoved(t *testing.T) {
	sys, node := testnode.Local(t, testnode.Options{Name: "r-parent"})
	child := testnode.Start(t, testnode.Options{Name: "r-child", Seeds: []string{"r-parent=" + node.Addr()}})
	require.NoError(t, node.Connect(ctxT(t, 10*time.Second), child.Name, child.Addr))

	who, err := sys.RequestNamed(ctxT(t, 10*time.Second), child.Name, "holder", &testpb.Echo{Text: "whoami"})
	require.NoError(t, err)
	w := who.(*testpb.Echo)
	inc, err := strconv.ParseUint(w.Text, 10, 64)
	require.NoError(t, err)
	remotePID := actor.PID{Node: w.From, Incarnation: inc, ID: uint64(w.N)}

	local, err := sys.SpawnFunc(func(c *actor.Context) {
		if _, ok := c.Message().(*testpb.Echo); ok {
			c.Respond(&testpb.Echo{From: "local"})
		}
	})
	require.NoError(t, err)
	held := func() int64 {
		v, err := sys.Call(ctxT(t, 5*time.Second), child.Name, "held", &testpb.Echo{})
		if err != nil {
			return -1
		}
		return v.(*testpb.Echo).N
	}
	g, err := router.NewGroup(sys, router.Config{Kind: router.RoundRobin}, router.Of(remotePID), router.Of(local))
	require.NoError(t, err)
	defer g.Close(ctxT(t, 5*time.Second))

	// Round-robin starts at the first routee and goes in turn: the even
	// requests go to the holder, which keeps them; the odd ones are
	// answered by the local routee.
	const pending = 10
	errs := make(chan error, pending)
	for i := range 2 * pending {
		if i%2 == 0 {
			go func() {
				_, err := g.Request(ctxT(t, 60*time.Second), sys, &testpb.Echo{Text: "hold"})
				errs <- err
			}()
			// The next pick must follow this one: wait until it is held.
			eventually(t, 10*time.Second, "the holder holds it", func() bool { return held() == int64(i/2+1) })
			continue
		}
		v, err := g.Request(ctxT(t, 10*time.Second), sys, &testpb.Echo{})
		require.NoError(t, err)
		require.Equal(t, "local", v.(*testpb.Echo).From)
	}

	killed := time.Now()
	child.Kill()
	var last time.Duration
	for range pending {
		err := <-errs
		require.Error(t, err)
		require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err), "a held request of a killed routee: %v", err)
		last = time.Since(killed)
	}
	eventually(t, 10*time.Second, "the killed routee removed", func() bool { return len(g.Routees()) == 1 })
	removed := time.Since(killed)
	t.Logf("after SIGKILL: %d pending requests failed as may-have-executed within %v; the routee was removed within %v", pending, last, removed)
	for range 4 {
		v, err := g.Request(ctxT(t, 5*time.Second), sys, &testpb.Echo{})
		require.NoError(t, err)
		require.Equal(t, "local", v.(*testpb.Echo).From)
	}
}
