package remote_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testutil"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/mailroomtest"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testnode.MaybeRunChild()
	goleak.VerifyTestMain(m)
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// pair starts a local node "a" and a child process "b" and links them.
func pair(t *testing.T) (*actor.System, *remote.Node, *testnode.Child) {
	t.Helper()
	b := testnode.Start(t, testnode.Options{Name: "b"})
	sys, n := testnode.Local(t, testnode.Options{Name: "a", Seeds: []string{b.Seed()}})
	require.NoError(t, n.Connect(ctxT(t, 10*time.Second), "b", ""))
	return sys, n, b
}

func remotePID(t *testing.T, sys *actor.System, node, name string) actor.PID {
	t.Helper()
	v, err := sys.Call(ctxT(t, 10*time.Second), node, "pid_of", &testpb.Echo{Text: name})
	require.NoError(t, err)
	pid, err := actor.ParsePID(v.(*testpb.Echo).Text)
	require.NoError(t, err)
	return pid
}

func TestCallCastAcrossProcesses(t *testing.T) {
	sys, _, b := pair(t)
	v, err := sys.Call(ctxT(t, 10*time.Second), "b", "echo", &testpb.Echo{Text: "hi", N: 41})
	require.NoError(t, err)
	e := v.(*testpb.Echo)
	require.Equal(t, "echo hi", e.Text)
	require.Equal(t, int64(42), e.N)
	require.Equal(t, "b", e.From)

	for range 5 {
		sys.Cast("b", "count", &testpb.Echo{N: 2})
	}
	eventually(t, "10 counted on b", func() bool {
		v, err := sys.Call(ctxT(t, 5*time.Second), "b", "count_get", &testpb.Echo{})
		return err == nil && v.(*testpb.Echo).N == 10
	})
	_ = b
}

func TestRequestAndSendToRemoteActors(t *testing.T) {
	sys, _, _ := pair(t)
	// By name.
	v, err := sys.RequestNamed(ctxT(t, 10*time.Second), "b", "echo", &testpb.Echo{Text: "named"})
	require.NoError(t, err)
	require.Equal(t, "actor named", v.(*testpb.Echo).Text)

	// By PID.
	pid := remotePID(t, sys, "b", "echo")
	require.Equal(t, "b", pid.Node)
	v, err = sys.Request(ctxT(t, 10*time.Second), pid, &testpb.Echo{Text: "by pid"})
	require.NoError(t, err)
	require.Equal(t, "actor by pid", v.(*testpb.Echo).Text)

	// A plain send from a local actor is echoed back to it: sends travel
	// both ways and the sender PID survives the trip.
	got := make(chan *testpb.Echo, 1)
	_, err = sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			c.SendNamed("b", "echo", &testpb.Echo{Text: "ping", N: 7})
		case *testpb.Echo:
			got <- m
		}
	})
	require.NoError(t, err)
	select {
	case m := <-got:
		require.Equal(t, "actor ping", m.Text)
		require.Equal(t, int64(7), m.N)
	case <-time.After(10 * time.Second):
		t.Fatal("no echo")
	}
}

func TestOrderPerSenderAcrossProcesses(t *testing.T) {
	sys, _, _ := pair(t)
	const n = 5000
	for i := range n {
		sys.Cast("b", "count", &testpb.Echo{N: int64(i + 1)})
	}
	// Casts run concurrently on b, so check the total, then per-sender
	// order with an actor round trip: every reply comes back in order.
	eventually(t, "all casts", func() bool {
		v, err := sys.Call(ctxT(t, 5*time.Second), "b", "count_get", &testpb.Echo{})
		return err == nil && v.(*testpb.Echo).N == n*(n+1)/2
	})
	got := make(chan int64, n)
	_, err := sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			for i := range n {
				c.SendNamed("b", "echo", &testpb.Echo{N: int64(i)})
			}
		case *testpb.Echo:
			got <- m.N
		}
	})
	require.NoError(t, err)
	for i := range n {
		select {
		case v := <-got:
			require.Equal(t, int64(i), v, "per-sender order")
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d came back", i, n)
		}
	}
}

func TestRemoteErrorsKeepTheirOutcome(t *testing.T) {
	sys, n, _ := pair(t)
	ctx := ctxT(t, 10*time.Second)

	_, err := sys.Call(ctx, "b", "reject", &testpb.Echo{Text: "no way"})
	var re *actor.RemoteError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "rejected", re.Code)
	require.Equal(t, "no way", re.Message)
	require.Equal(t, actor.Executed, actor.Outcome(err))
	require.Contains(t, err.Error(), "on node b (incarnation")

	_, err = sys.Call(ctx, "b", "panic", &testpb.Echo{})
	var pe *actor.PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "test panic on b", pe.Value)
	require.Equal(t, actor.Executed, actor.Outcome(err))

	_, err = sys.Call(ctx, "b", "nope", &testpb.Echo{})
	require.ErrorIs(t, err, actor.ErrNoFunction)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	require.Contains(t, err.Error(), "to nope: no such function: not executed; safe to retry")

	_, err = sys.RequestNamed(ctx, "b", "nobody", &testpb.Echo{})
	require.ErrorIs(t, err, actor.ErrNoProcess)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))

	// An unregistered type: an error reply, and b keeps serving.
	require.NoError(t, sys.RegisterTypes(&testpb.Unknown{}))
	_, err = sys.Call(ctx, "b", "echo", &testpb.Unknown{Text: "?"})
	require.ErrorIs(t, err, actor.ErrBadMessage)
	require.Contains(t, err.Error(), `unregistered message type "mailroom.testpb.Unknown" on node b (register it with System.RegisterTypes on node b)`, "the error names the node that lacks the type")
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	before := remoteDeadLetters(t, sys)
	sys.SendNamed("b", "echo", &testpb.Unknown{Text: "?"})
	eventually(t, "the unknown send counted as a dead letter on b", func() bool { return remoteDeadLetters(t, sys) == before+1 })

	// Not a proto message: refused locally, clearly.
	_, err = sys.RequestNamed(ctx, "b", "echo", "a string")
	require.ErrorIs(t, err, actor.ErrBadMessage)
	require.Contains(t, err.Error(), "string is not a proto.Message")

	// Unknown node.
	_, err = sys.Call(ctx, "nowhere", "echo", &testpb.Echo{})
	require.ErrorIs(t, err, actor.ErrUnreachable)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))

	v, err := sys.Call(ctx, "b", "echo", &testpb.Echo{Text: "still here"})
	require.NoError(t, err)
	require.Equal(t, "echo still here", v.(*testpb.Echo).Text)
	require.Zero(t, n.Stats().BadFrames)
}

func remoteDeadLetters(t *testing.T, sys *actor.System) int64 {
	v, err := sys.Call(ctxT(t, 5*time.Second), "b", "stats", &testpb.Echo{})
	require.NoError(t, err)
	return v.(*testpb.Echo).N
}

func TestDeadlineAndCancelTravel(t *testing.T) {
	sys, _, _ := pair(t)
	// The deadline travels: b's handler sees it and stops early.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := sys.Call(ctx, "b", "sleep", &testpb.Sleep{Millis: 10000})
	// Either clock may fire first: ours, or b's, whose handler then
	// returns ctx.Err(). Both give the same error and outcome.
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err))
	require.Less(t, time.Since(start), 5*time.Second)
	eventually(t, "b's handler saw the deadline", func() bool { return cancelledOnB(t, sys) >= 1 })

	// Cancel: a cancel frame reaches the exact call on b.
	ctx2, cancel2 := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { _, err := sys.Call(ctx2, "b", "sleep", &testpb.Sleep{Millis: 60000}); res <- err }()
	before := cancelledOnB(t, sys)
	eventually(t, "the call is running on b", func() bool { _, s := bStats(t, sys); return s == 1 })
	cancel2()
	err = <-res
	require.ErrorIs(t, err, context.Canceled)
	eventually(t, "b's handler was cancelled", func() bool { return cancelledOnB(t, sys) > before })

	// A deadline already passed is not executed and not even sent.
	past, cancel3 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel3()
	_, err = sys.Call(past, "b", "echo", &testpb.Echo{})
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
}

// bStats returns b's cancelled and running sleep calls.
func bStats(t *testing.T, sys *actor.System) (cancelled, sleeping int) {
	v, err := sys.Call(ctxT(t, 5*time.Second), "b", "stats", &testpb.Echo{})
	require.NoError(t, err)
	_, err = fmt.Sscanf(v.(*testpb.Echo).Text, "cancelled=%d sleeping=%d", &cancelled, &sleeping)
	require.NoError(t, err)
	return cancelled, sleeping
}

func cancelledOnB(t *testing.T, sys *actor.System) int {
	c, _ := bStats(t, sys)
	return c
}

func TestRemoteWatch(t *testing.T) {
	sys, _, b := pair(t)
	stopper := remotePID(t, sys, "b", "stopper")
	echo := remotePID(t, sys, "b", "echo")
	probe, err := mailroomtest.NewProbe(sys)
	require.NoError(t, err)
	require.NoError(t, probe.Watch(stopper))
	require.NoError(t, probe.Watch(echo))
	// Give the watch frames a round trip to land before stopping: a call
	// on the same link is ordered behind them.
	_, err = sys.Call(ctxT(t, 5*time.Second), "b", "echo", &testpb.Echo{})
	require.NoError(t, err)

	sys.Send(stopper, &testpb.Echo{Text: "stop"})
	term, err := probe.ExpectTerminated(stopper, 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, term.Reason, "a normal stop")

	b.Kill()
	term, err = probe.ExpectTerminated(echo, 10*time.Second)
	require.NoError(t, err)
	require.ErrorIs(t, term.Reason, actor.ErrNodeDown)
}

func TestStalePIDOfRestartedNode(t *testing.T) {
	b1 := testnode.Start(t, testnode.Options{Name: "b"})
	sys, n := testnode.Local(t, testnode.Options{Name: "a", Seeds: []string{b1.Seed()}})
	require.NoError(t, n.Connect(ctxT(t, 10*time.Second), "b", ""))
	old := remotePID(t, sys, "b", "echo")
	b1.Kill()

	b2 := testnode.Start(t, testnode.Options{Name: "b"})
	require.NotEqual(t, b1.Incarnation, b2.Incarnation)
	require.NoError(t, n.Connect(ctxT(t, 10*time.Second), "b", b2.Addr))
	fresh := remotePID(t, sys, "b", "echo")
	require.Equal(t, b2.Incarnation, fresh.Incarnation)

	_, err := sys.Request(ctxT(t, 5*time.Second), old, &testpb.Echo{Text: "old"})
	require.ErrorIs(t, err, actor.ErrNoProcess)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	before := sys.DeadLetters()
	sys.Send(old, &testpb.Echo{Text: "old"})
	require.Equal(t, before+1, sys.DeadLetters(), "a stale PID is a dead letter, never the new actor")

	v, err := sys.Request(ctxT(t, 5*time.Second), fresh, &testpb.Echo{Text: "new"})
	require.NoError(t, err)
	require.Equal(t, "actor new", v.(*testpb.Echo).Text)
}

// TestAKilledNodeThatComesBackIsAdmittedAtOnce: b dials a, is killed
// (SIGKILL) and restarts under the same name. An incarnation with live
// links is not replaced on a hello's word, but a killed one's links are
// reset by the kernel: the new incarnation's first dial is admitted, with
// no wait for liveness.
func TestAKilledNodeThatComesBackIsAdmittedAtOnce(t *testing.T) {
	sys, n := testnode.Local(t, testnode.Options{Name: "a"})
	dialA := func(b *testnode.Child) (*testpb.Echo, error) {
		require.NoError(t, n.Connect(ctxT(t, 10*time.Second), "b", b.Addr))
		v, err := sys.Call(ctxT(t, 10*time.Second), "b", "call_node", &testpb.Echo{Text: "a echo", N: 1})
		if err != nil {
			return nil, err
		}
		return v.(*testpb.Echo), nil
	}
	seeds := []string{"a=" + n.Addr()}
	b1 := testnode.Start(t, testnode.Options{Name: "b", Seeds: seeds})
	res, err := dialA(b1)
	require.NoError(t, err)
	require.Equal(t, int64(1), res.N, "b1 called a: %s", res.Text)
	b1.Kill()

	b2 := testnode.Start(t, testnode.Options{Name: "b", Seeds: seeds})
	start := time.Now()
	res, err = dialA(b2)
	require.NoError(t, err)
	require.Equal(t, int64(1), res.N, "b2's first dial to a was admitted: %s", res.Text)
	t.Logf("the restarted node linked both ways in %v", time.Since(start).Round(time.Millisecond))
	info, ok := n.Peer("b")
	require.True(t, ok)
	require.Equal(t, b2.Incarnation, info.Incarnation)
}

func TestPendingCallsFailWhenTheNodeDies(t *testing.T) {
	sys, n, b := pair(t)
	const calls = 200
	errs := make(chan error, calls)
	var started atomic.Int64
	for range calls {
		go func() {
			started.Add(1)
			_, err := sys.Call(context.Background(), "b", "sleep", &testpb.Sleep{Millis: 60000})
			errs <- err
		}()
	}
	eventually(t, "all calls pending", func() bool { return n.Stats().Pending == calls })
	// Pending counts a call from the moment it is queued on the link: a
	// kill before it was written fails it as not sent, rightly. Kill once
	// b runs them all.
	eventually(t, "all calls running on b", func() bool {
		_, sleeping := bStats(t, sys)
		return sleeping == calls
	})
	killed := time.Now()
	b.Kill()
	var slowest time.Duration
	for range calls {
		err := <-errs
		if d := time.Since(killed); d > slowest {
			slowest = d
		}
		require.ErrorIs(t, err, actor.ErrNodeDown)
		require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err))
	}
	t.Logf("%d calls failed within %v of the kill", calls, slowest)
	require.Less(t, slowest, 2*time.Second)
}

func TestWrongCookieIsRefusedAndOthersKeepWorking(t *testing.T) {
	sys, n, _ := pair(t)
	bad, badNode := testnode.Local(t, testnode.Options{Name: "intruder", Cookie: "a-wrong-cookie-0123456789"})
	err := badNode.Connect(ctxT(t, 5*time.Second), "a", n.Addr())
	require.ErrorIs(t, err, actor.ErrUnreachable)
	require.Contains(t, err.Error(), "bad cookie")
	_ = bad
	eventually(t, "the refusal counted on a", func() bool { return n.Stats().HandshakeFailures >= 1 })
	v, err := sys.Call(ctxT(t, 5*time.Second), "b", "echo", &testpb.Echo{Text: "fine"})
	require.NoError(t, err)
	require.Equal(t, "echo fine", v.(*testpb.Echo).Text)
}

func TestConfigValidation(t *testing.T) {
	sys, err := actor.Start(actor.Config{Name: "v", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	defer sys.Stop(context.Background())
	ctx := ctxT(t, 10*time.Second)
	_, err = remote.Start(ctx, sys, remote.Config{})
	require.ErrorContains(t, err, "Cookie is empty")
	cookie := remote.NewCookie()
	_, err = remote.Start(ctx, sys, remote.Config{Cookie: cookie, PoolSize: -5})
	require.ErrorContains(t, err, "PoolSize is -5")
	_, err = remote.Start(ctx, sys, remote.Config{Cookie: cookie, Limits: remote.Limits{MaxFrameSize: 10}})
	require.ErrorContains(t, err, "MaxFrameSize is 10")
	_, err = remote.Start(ctx, sys, remote.Config{Cookie: cookie, Seeds: []string{"bad"}})
	require.ErrorContains(t, err, `seed "bad"`)
	_, err = remote.Start(ctx, sys, remote.Config{Cookie: cookie, Limits: remote.Limits{MaxHandshakes: -1}})
	require.ErrorContains(t, err, "MaxHandshakes -1")

	// A short cookie is refused unless a test says it knows better.
	_, err = remote.Start(ctx, sys, remote.Config{Cookie: "hunter2"})
	require.ErrorContains(t, err, "Cookie is 7 bytes, want at least 16")
	short, err := actor.Start(actor.Config{Name: "short", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	defer short.Stop(context.Background())
	_, err = remote.Start(ctx, short, remote.Config{Cookie: "hunter2", InsecureShortCookie: true})
	require.NoError(t, err)

	// TLS binds names to certificates: the server must verify client
	// certificates, and VerifyPeer needs TLS.
	_, err = remote.Start(ctx, sys, remote.Config{Cookie: cookie, TLSServer: &tls.Config{}, TLSClient: &tls.Config{}})
	require.ErrorContains(t, err, "TLSServer.ClientAuth")
	_, err = remote.Start(ctx, sys, remote.Config{Cookie: cookie, VerifyPeer: func(string, tls.ConnectionState) error { return nil }})
	require.ErrorContains(t, err, "VerifyPeer is set without TLS")
}

func TestNewCookie(t *testing.T) {
	a, b := remote.NewCookie(), remote.NewCookie()
	require.Len(t, a, 43, "256 bits, base64url")
	require.NotEqual(t, a, b)
}

// eventually polls cond until it holds (internal/testing/testutil).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, cond)
}
