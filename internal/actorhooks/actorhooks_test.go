package actorhooks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

// The package's init asserted every hook's type: a test binary that
// starts at all proves the slots match. These tests check that each hook
// does what its comment says, through a real System.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T) *actor.System {
	t.Helper()
	sys, err := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sys.Stop(context.Background())) })
	return sys
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestDeliverAndInjectReachTheActor(t *testing.T) {
	sys := start(t)
	got := make(chan any, 8)
	gate, holding := make(chan struct{}), make(chan string, 8)
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open) // before Stop, should the test fail early
	pid, err := sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case string:
			holding <- m
			<-gate
			got <- m
			c.Respond("ok " + m)
		}
	}).WithMailbox(2, actor.FailFast), "target")
	require.NoError(t, err)

	sender := actor.PID{Node: "peer", Incarnation: 7, ID: 3}
	require.NoError(t, actorhooks.DeliverLocal(sys, context.Background(), sender, pid, "a", nil))
	require.Equal(t, "a", <-holding) // held at the gate: in hand, counted in the depth
	require.Equal(t, 1, sys.MailboxLen(pid))
	require.NoError(t, actorhooks.DeliverNamed(sys, context.Background(), sender, "target", "b", nil))
	require.Equal(t, 2, sys.MailboxLen(pid))
	require.ErrorIs(t, actorhooks.DeliverLocal(sys, context.Background(), sender, pid, "full", nil), actor.ErrMailboxFull)
	require.NoError(t, actorhooks.Inject(sys, pid, "c"), "Inject ignores the bound")
	require.Equal(t, 3, sys.MailboxLen(pid))
	n, err := actorhooks.DeliverRun(sys, context.Background(), actor.PID{}, "target", []any{"d", "e"}, []actor.PID{sender, sender})
	require.Zero(t, n)
	require.ErrorIs(t, err, actor.ErrMailboxFull)
	open()
	for _, want := range []string{"a", "b", "c"} {
		require.Equal(t, want, <-got)
	}

	f := actorhooks.NewFuture(sys)
	require.NoError(t, actorhooks.DeliverLocal(sys, context.Background(), sender, pid, "q", f))
	v, err, ok := f.Wait(context.Background(), nil)
	require.True(t, ok)
	require.NoError(t, err)
	require.Equal(t, "ok q", v)
	<-got
	f.Reply("late", nil)
	require.Equal(t, uint64(1), sys.LateReplies())

	require.NoError(t, sys.StopActorWait(context.Background(), pid))
	require.Equal(t, -1, sys.MailboxLen(pid))
	require.ErrorIs(t, actorhooks.Inject(sys, pid, "x"), actor.ErrNoProcess)
	require.ErrorIs(t, actorhooks.DeliverLocal(sys, context.Background(), sender, pid, "x", nil), actor.ErrNoProcess)
}

// recorder is a transport that records the watch traffic it is given.
type recorder struct {
	mu       sync.Mutex
	watches  []actor.PID // targets
	notified map[actor.PID]error
}

func (r *recorder) Send(ctx context.Context, sender, to actor.PID, msg any) error {
	return actor.ErrUnreachable
}
func (r *recorder) SendNamed(ctx context.Context, sender actor.PID, node, name string, msg any) error {
	return actor.ErrUnreachable
}
func (r *recorder) Request(ctx context.Context, sender, to actor.PID, msg any) (any, error) {
	return nil, actor.ErrUnreachable
}
func (r *recorder) RequestNamed(ctx context.Context, sender actor.PID, node, name string, msg any) (any, error) {
	return nil, actor.ErrUnreachable
}
func (r *recorder) Cast(ctx context.Context, sender actor.PID, node, fn string, arg proto.Message) error {
	return actor.ErrUnreachable
}
func (r *recorder) Call(ctx context.Context, sender actor.PID, node, fn string, arg proto.Message) (proto.Message, error) {
	return nil, actor.ErrUnreachable
}
func (r *recorder) Watch(watcher, target actor.PID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watches = append(r.watches, target)
}
func (r *recorder) Unwatch(watcher, target actor.PID) {}
func (r *recorder) NotifyTerminated(watcher, pid actor.PID, reason error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notified[watcher] = reason
}

func (r *recorder) notice(watcher actor.PID) (error, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err, ok := r.notified[watcher]
	return err, ok
}

func TestWatchAndNotify(t *testing.T) {
	sys := start(t)
	rec := &recorder{notified: map[actor.PID]error{}}
	actorhooks.SetTransport(sys, rec)
	defer actorhooks.SetTransport(sys, nil)

	// A local actor watches a remote one: the transport is asked, and
	// tells the watcher with NotifyTerminated when it ends.
	terms := make(chan actor.Terminated, 4)
	remoteTarget := actor.PID{Node: "peer", Incarnation: 7, ID: 9}
	watcher, err := sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case string:
			c.Watch(remoteTarget)
			c.Respond("watching")
		case actor.Terminated:
			terms <- m
		}
	})
	require.NoError(t, err)
	_, err = sys.Request(context.Background(), watcher, "watch")
	require.NoError(t, err)
	require.Equal(t, []actor.PID{remoteTarget}, rec.watches)
	down := errors.New("node down")
	actorhooks.NotifyTerminated(sys, watcher, remoteTarget, down)
	term := <-terms
	require.Equal(t, remoteTarget, term.PID)
	require.ErrorIs(t, term.Reason, down)

	// Remote actors watch local ones: the transport hears when they end.
	w1 := actor.PID{Node: "peer", Incarnation: 7, ID: 1}
	w2 := actor.PID{Node: "peer", Incarnation: 7, ID: 2}
	w3 := actor.PID{Node: "peer", Incarnation: 7, ID: 3}
	target, err := sys.SpawnFunc(func(*actor.Context) {})
	require.NoError(t, err)
	actorhooks.WatchLocal(sys, w1, target)
	actorhooks.WatchLocal(sys, w2, target)
	actorhooks.UnwatchLocal(sys, w2, target)
	require.NoError(t, sys.StopActorWait(context.Background(), target))
	reason, ok := rec.notice(w1) // watchers are told before the actor is gone
	require.True(t, ok)
	require.NoError(t, reason)
	_, ok = rec.notice(w2)
	require.False(t, ok, "the watch was cancelled")

	actorhooks.WatchLocal(sys, w3, target) // gone already: told at once
	reason, ok = rec.notice(w3)
	require.True(t, ok)
	require.ErrorIs(t, reason, actor.ErrNoProcess)
}

func TestFunctionsAndDeadLetters(t *testing.T) {
	sys := start(t)
	var dead []actor.DeadLetter
	cancel := sys.SubscribeDeadLetters(func(d actor.DeadLetter) { dead = append(dead, d) })
	defer cancel()

	ran := make(chan string, 1)
	require.NoError(t, sys.Register("echo", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		e := arg.(*testpb.Echo)
		if e.N < 0 {
			panic("negative")
		}
		ran <- e.Text
		return e, nil
	}))
	h, ok := actorhooks.Function(sys, "echo")
	require.True(t, ok)
	_, ok = actorhooks.Function(sys, "none")
	require.False(t, ok)

	res, err := actorhooks.RunHandler(sys, context.Background(), "call", "echo", h, &testpb.Echo{Text: "x"})
	require.NoError(t, err)
	require.Equal(t, "x", res.(*testpb.Echo).Text)
	<-ran
	_, err = actorhooks.RunHandler(sys, context.Background(), "call", "echo", h, &testpb.Echo{N: -1})
	var pe *actor.PanicError
	require.ErrorAs(t, err, &pe)
	past, cancelPast := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelPast()
	_, err = actorhooks.RunHandler(sys, past, "call", "echo", h, &testpb.Echo{})
	require.ErrorIs(t, err, actor.ErrDeadlineExceeded)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))

	done := make(chan struct{})
	require.True(t, actorhooks.CastLocal(sys, context.Background(), "echo", &testpb.Echo{Text: "cast"}, func() { close(done) }))
	require.Equal(t, "cast", <-ran)
	<-done
	done = make(chan struct{})
	before := sys.DeadLetters()
	require.False(t, actorhooks.CastLocal(sys, context.Background(), "none", &testpb.Echo{}, func() { close(done) }))
	<-done
	require.Equal(t, before+1, sys.DeadLetters(), "a cast to no function is a dead letter")

	actorhooks.DeadLetter(sys, actor.PID{Node: "peer"}, actor.PID{}, "lost", actor.ErrNodeDown)
	require.Equal(t, before+2, sys.DeadLetters())
	require.Equal(t, "lost", dead[len(dead)-1].Message)
	require.ErrorIs(t, dead[len(dead)-1].Reason, actor.ErrNodeDown)
}

func TestRestartProps(t *testing.T) {
	sys := start(t)
	first := make(chan any, 2)
	props := actor.PropsFromFunc(func(c *actor.Context) {
		switch c.Message().(type) {
		case actor.Restarting, actor.Started:
			first <- c.Message()
		}
	})
	r := actor.Restarting{Previous: actor.PID{Node: "n", Incarnation: 1, ID: 1}, Count: 2}
	_, err := sys.Spawn(actorhooks.RestartProps(props, r))
	require.NoError(t, err)
	require.Equal(t, r, <-first)
	require.Equal(t, actor.Started{}, <-first)
}

// SetTransport is exercised by every remote test; with none attached,
// another node is unreachable.
func TestNoTransportIsUnreachable(t *testing.T) {
	sys := start(t)
	actorhooks.SetTransport(sys, nil)
	_, err := sys.Request(context.Background(), actor.PID{Node: "peer", Incarnation: 1, ID: 1}, "x")
	require.ErrorIs(t, err, actor.ErrUnreachable)
}
