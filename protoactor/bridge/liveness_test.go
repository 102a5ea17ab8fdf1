package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	mr "github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/protoactor/bridge"
	"github.com/mailroom-go/mailroom/protoactor/internal/testpb"
	"github.com/stretchr/testify/require"
)

// maxFailAfterKill bounds how long after a SIGKILL the last future
// waiting on the killed node may fail: a tenth of their timeout, so a
// future that waited for its timeout fails the test, while a loaded CI
// machine scheduling 1,000 recorders late does not. How fast they fail is
// a measurement (logged here; typically 1-10 ms for the first), not a
// test: ErrNodeDown is what proves the node's loss failed them, since
// a timeout would end them with protoactor's ErrTimeout.
const maxFailAfterKill = futureTimeout / 10

// 1,000 futures wait on a child process that holds their requests; the
// child is SIGKILLed. Every future fails with mailroom's ErrNodeDown (may
// have executed), none by its 30 s timeout, and a watcher of an actor
// there gets Terminated (AddressTerminated).
func TestNodeLossFailsPendingFuturesAtOnce(t *testing.T) {
	const n = 1000
	a := startNode(t, "a")
	c := startChild(t, "c")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Remote.Connect(ctx, "c", c.addr))

	holder := actor.NewPID(bridge.NodeAddress("c"), "holder")
	echoOnC := actor.NewPID(bridge.Address("c", c.inc), "echo")
	p, got := spawnProbe(t, a)
	a.Actors.Root.Send(p, watchCmd{pid: echoOnC})

	// Each future pipes its result to a recorder that notes when it came:
	// the moment the future failed, not when a waiter was scheduled.
	type outcome struct {
		res any
		at  time.Time
	}
	results := make(chan outcome, n)
	for range n {
		f := a.Actors.Root.RequestFuture(holder, &testpb.Sleep{Millis: 60_000}, futureTimeout)
		rec, _ := a.Actors.ProcessRegistry.Add(recorder(func(msg any) { results <- outcome{msg, time.Now()} }), "recorder"+a.Actors.ProcessRegistry.NextId())
		f.PipeTo(rec)
	}
	// Every request is held on c (a request after them on the same path
	// answers how many), and the watch is set.
	eventually(t, "c holds every request", func() bool {
		res, err := bridge.Result(a.Actors.Root.RequestFuture(holder, &testpb.Ping{Text: "held?"}, futureTimeout))
		return err == nil && res.(*testpb.Pong).N == n
	})
	_, err := bridge.Result(a.Actors.Root.RequestFuture(echoOnC, &testpb.Ping{}, futureTimeout))
	require.NoError(t, err)
	require.Equal(t, n, a.Bridge.Stats().Pending)

	killedAt := time.Now()
	c.kill()
	var worst time.Duration
	first := time.Hour
	for range n {
		r := <-results
		err, _ := r.res.(error)
		require.ErrorIs(t, err, mr.ErrNodeDown)
		require.Equal(t, mr.MayHaveExecuted, mr.Outcome(err))
		worst = max(worst, r.at.Sub(killedAt))
		first = min(first, r.at.Sub(killedAt))
	}
	t.Logf("%d futures failed; the first %v, the last %v after the kill", n, first, worst)
	require.Less(t, worst, maxFailAfterKill, "a future waited on a dead node")

	term := next(t, got).(*actor.Terminated)
	require.Equal(t, "echo", term.Who.Id)
	require.Equal(t, actor.TerminatedReason_AddressTerminated, term.Why)
	st := a.Bridge.Stats()
	require.Equal(t, 0, st.Pending)
	require.Equal(t, 0, st.Peers)
	require.GreaterOrEqual(t, st.FailedRequests, uint64(n))
}

// A future's own timeout still works through the bridge (a target that
// never answers), and the bridge keeps serving.
func TestFutureTimeoutStillWorks(t *testing.T) {
	a, b := pair(t)
	_, err := b.Actors.Root.SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), "silent")
	require.NoError(t, err)
	spawnEcho(t, b, "echo")
	_, err = a.Actors.Root.RequestFuture(actor.NewPID(bridge.NodeAddress("b"), "silent"), &testpb.Ping{}, 20*time.Millisecond).Result()
	require.ErrorIs(t, err, actor.ErrTimeout)
	res, err := bridge.Result(a.Actors.Root.RequestFuture(actor.NewPID(bridge.NodeAddress("b"), "echo"), &testpb.Ping{Text: "still"}, futureTimeout))
	require.NoError(t, err)
	require.Equal(t, "still", res.(*testpb.Pong).Text)
}

// recorder is a protoactor process that hands what it is sent to fn.
type recorder func(msg any)

func (r recorder) SendUserMessage(_ *actor.PID, msg any)   { r(msg) }
func (r recorder) SendSystemMessage(_ *actor.PID, msg any) { r(msg) }
func (r recorder) Stop(*actor.PID)                         {}
