package idempotency

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// waiting is how many repeats wait for key's running attempt.
func (g *Guard) waiting(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if a := g.running[key]; a != nil {
		return len(a.waiters)
	}
	return -1
}

// checkOnce runs the checks every node pair shares: caller asks node,
// where s is installed (release holds idem.actor's "hold" answers).
func checkOnce(t *testing.T, caller *actor.System, node string, s *served, release chan struct{}) {
	ctx := ctxT(t)
	// A function: the repeat gets the recorded reply, of the same type.
	r1, err := caller.Call(WithKey(ctx, "fn-1"), node, "idem.echo", &testpb.Echo{Text: "a"})
	require.NoError(t, err)
	r2, err := caller.Call(WithKey(ctx, "fn-1"), node, "idem.echo", &testpb.Echo{Text: "b"})
	require.NoError(t, err)
	require.Equal(t, "ran a", r2.(*testpb.Echo).Text, "the repeat got the first reply")
	require.Equal(t, r1.(*testpb.Echo).N, r2.(*testpb.Echo).N, "and the handler did not run again")
	before := s.runs.Load()
	_, err = caller.Call(ctx, node, "idem.echo", &testpb.Echo{Text: "c"})
	require.NoError(t, err)
	_, err = caller.Call(ctx, node, "idem.echo", &testpb.Echo{Text: "c"})
	require.NoError(t, err)
	require.Equal(t, before+2, s.runs.Load(), "calls without a key pass")

	// A rejection is recorded: the repeat gets it again, executed, with
	// its code, and the handler does not run again.
	before = s.runs.Load()
	for range 2 {
		_, err = caller.Call(WithKey(ctx, "rej-1"), node, "idem.reject", &testpb.Echo{})
		var re *actor.RemoteError
		require.ErrorAs(t, err, &re)
		require.Equal(t, "nope", re.Code)
		require.Equal(t, actor.Executed, actor.Outcome(err))
	}
	require.Equal(t, before+1, s.runs.Load())
	st, err := Status(ctx, caller, node, "rej-1", s.g.inc)
	require.NoError(t, err)
	_, err = st.Result()
	require.Equal(t, actor.Executed, actor.Outcome(err), "%v", err)
	require.Equal(t, "nope", actor.ErrorCode(err))

	// An actor: a repeat after done gets the recorded reply.
	a1, err := caller.RequestNamed(WithKey(ctx, "act-1"), node, "idem.actor", &testpb.Echo{Text: "x"})
	require.NoError(t, err)
	a2, err := caller.RequestNamed(WithKey(ctx, "act-1"), node, "idem.actor", &testpb.Echo{Text: "y"})
	require.NoError(t, err)
	require.Equal(t, "actor x", a2.(*testpb.Echo).Text)
	require.Equal(t, a1.(*testpb.Echo).N, a2.(*testpb.Echo).N)

	// A repeat while the first runs (answered from another goroutine:
	// the actor is free) waits, and both get the first result.
	before = s.runs.Load()
	first, second := make(chan any, 1), make(chan any, 1)
	go func() {
		v, err := caller.RequestNamed(WithKey(ctx, "act-2"), node, "idem.actor", &testpb.Echo{Text: "hold"})
		if err != nil {
			first <- err
			return
		}
		first <- v
	}()
	eventually(t, 10*time.Second, "the first attempt running", func() bool { return s.g.waiting("act-2") == 0 })
	go func() {
		v, err := caller.RequestNamed(WithKey(ctx, "act-2"), node, "idem.actor", &testpb.Echo{Text: "other"})
		if err != nil {
			second <- err
			return
		}
		second <- v
	}()
	eventually(t, 10*time.Second, "the repeat waiting", func() bool { return s.g.waiting("act-2") == 1 })
	// The actor is not held by the waiting repeat: it answers others.
	_, err = caller.RequestNamed(ctx, node, "idem.actor", &testpb.Echo{Text: "free"})
	require.NoError(t, err)
	close(release)
	v1, v2 := <-first, <-second
	require.IsType(t, &testpb.Echo{}, v1, "%v", v1)
	require.IsType(t, &testpb.Echo{}, v2, "%v", v2)
	require.Equal(t, "actor hold", v2.(*testpb.Echo).Text, "the repeat got the first result")
	require.Equal(t, v1.(*testpb.Echo).N, v2.(*testpb.Echo).N)
	require.Equal(t, before+2, s.runs.Load(), "the hold and the free request ran, the repeat did not")
	require.Equal(t, -1, s.g.waiting("act-2"))

	// A key fenced by never-ran refuses a late copy: not executed.
	st, err = Status(ctx, caller, node, "late-1", s.g.inc)
	require.NoError(t, err)
	require.Equal(t, NeverRan, st.State)
	before = s.runs.Load()
	_, err = caller.Call(WithKey(ctx, "late-1"), node, "idem.echo", &testpb.Echo{Text: "late"})
	require.ErrorIs(t, err, ErrFenced)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err), "%v", err)
	_, err = caller.RequestNamed(WithKey(ctx, "late-1"), node, "idem.actor", &testpb.Echo{Text: "late"})
	require.ErrorIs(t, err, ErrFenced)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err), "%v", err)
	require.Equal(t, before, s.runs.Load(), "the late copies did not run")

	// The call made again with a higher attempt runs, once; a late copy
	// of the fenced attempt then gets its result, without a run.
	again := WithAttempt(WithKey(ctx, "late-1"), 1)
	r, err := caller.Call(again, node, "idem.echo", &testpb.Echo{Text: "retry"})
	require.NoError(t, err)
	require.Equal(t, "ran retry", r.(*testpb.Echo).Text)
	r, err = caller.Call(WithKey(ctx, "late-1"), node, "idem.echo", &testpb.Echo{Text: "late"})
	require.NoError(t, err)
	require.Equal(t, "ran retry", r.(*testpb.Echo).Text)
	require.Equal(t, before+1, s.runs.Load())

	// Status with an attempt fences up to it: attempt 1 is refused, 2 runs.
	st, err = Status(WithAttempt(ctx, 1), caller, node, "late-2", s.g.inc)
	require.NoError(t, err)
	require.Equal(t, NeverRan, st.State)
	_, err = caller.Call(WithAttempt(WithKey(ctx, "late-2"), 1), node, "idem.echo", &testpb.Echo{Text: "a1"})
	require.ErrorIs(t, err, ErrFenced)
	st, err = Status(WithAttempt(ctx, 2), caller, node, "late-2", s.g.inc)
	require.NoError(t, err)
	require.Equal(t, NeverRan, st.State, "the fence raised to attempt 2")
	_, err = caller.Call(WithAttempt(WithKey(ctx, "late-2"), 2), node, "idem.echo", &testpb.Echo{Text: "a2"})
	require.ErrorIs(t, err, ErrFenced)
	v, err := caller.RequestNamed(WithAttempt(WithKey(ctx, "late-2"), 3), node, "idem.actor", &testpb.Echo{Text: "a3"})
	require.NoError(t, err)
	require.Equal(t, "actor a3", v.(*testpb.Echo).Text)
	require.Equal(t, before+2, s.runs.Load())

	// Status of a done key: its record, the reply decodable.
	st, err = Status(ctx, caller, node, "fn-1", s.g.inc)
	require.NoError(t, err)
	require.Equal(t, Done, st.State)
	m, err := st.Result()
	require.NoError(t, err)
	require.Equal(t, "ran a", m.(*testpb.Echo).Text)

	// An in-memory store asked about another incarnation: lost, said so
	// with its code.
	_, err = Status(ctx, caller, node, "fn-1", s.g.inc+1)
	require.ErrorIs(t, err, ErrRecordLost)
	require.Equal(t, "idempotency_record_lost", actor.ErrorCode(err))
}

// TestMiddlewareAndHandlerLocally: the checks on one node.
func TestMiddlewareAndHandlerLocally(t *testing.T) {
	sys, err := actor.Start(actor.Config{Name: "solo"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sys.Stop(context.Background())) })
	require.NoError(t, sys.RegisterTypes(&testpb.Echo{}))
	release := make(chan struct{})
	s, err := install(sys, NewGuard(NewMemory(MemoryConfig{}), sys.Incarnation()), t.TempDir(), release)
	require.NoError(t, err)
	checkOnce(t, sys, "solo", s, release)
}

// TestMiddlewareAndHandlerAcrossNodes: the key travels with the call and
// the request; Status answers over the wire.
func TestMiddlewareAndHandlerAcrossNodes(t *testing.T) {
	_, bn := testnode.Local(t, testnode.Options{Name: "idem-b"})
	bsys := bn.System()
	a, _ := testnode.Local(t, testnode.Options{Name: "idem-a", Seeds: []string{"idem-b=" + bn.Addr()}})
	release := make(chan struct{})
	s, err := install(bsys, NewGuard(NewMemory(MemoryConfig{}), bsys.Incarnation()), t.TempDir(), release)
	require.NoError(t, err)
	checkOnce(t, a, "idem-b", s, release)
}

// TestAPanicIsRecorded: a keyed request whose handler panics is recorded
// (executed); the repeat gets that, not a second run.
func TestAPanicIsRecorded(t *testing.T) {
	sys, err := actor.Start(actor.Config{Name: "solo"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sys.Stop(context.Background())) })
	g := NewGuard(NewMemory(MemoryConfig{}), sys.Incarnation())
	runs := 0
	pid, err := sys.Spawn(&actor.Props{
		Producer: func() actor.Actor {
			return actor.ReceiveFunc(func(c *actor.Context) {
				if _, ok := c.Message().(*testpb.Echo); ok {
					runs++
					panic("poison")
				}
			})
		},
		ReceiveMiddleware: []actor.ReceiveMiddleware{Middleware(g)},
	})
	require.NoError(t, err)
	_, err = sys.Request(WithKey(ctxT(t), "p"), pid, &testpb.Echo{})
	var pe *actor.PanicError
	require.True(t, errors.As(err, &pe), "%v", err)
	rec, ok, err := g.store.Get("p")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Done, rec.State)
	require.Contains(t, rec.Err, "poison")
	require.Equal(t, actor.Executed, rec.Outcome)
	require.Equal(t, 1, runs)
}

// TestKeyedSendsAndStash: a keyed send is handled once, a refused one is
// a dead letter; a keyed request the actor stashes and unstashes is the
// same attempt (not a repeat waiting for itself).
func TestKeyedSendsAndStash(t *testing.T) {
	sys, err := actor.Start(actor.Config{Name: "solo"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sys.Stop(context.Background())) })
	g := NewGuard(NewMemory(MemoryConfig{MaxKeys: 2}), sys.Incarnation())
	runs := make(chan string, 16)
	stashed := false
	pid, err := sys.Spawn(&actor.Props{
		Producer: func() actor.Actor {
			return actor.ReceiveFunc(func(c *actor.Context) {
				e, ok := c.Message().(*testpb.Echo)
				if !ok {
					return
				}
				switch {
				case e.Text == "stash" && !stashed:
					stashed = true
					require.NoError(t, c.Stash())
					return
				case e.Text == "unstash":
					c.UnstashAll()
					return
				}
				runs <- e.Text
				c.Respond(&testpb.Echo{Text: "did " + e.Text})
			})
		},
		ReceiveMiddleware: []actor.ReceiveMiddleware{Middleware(g)},
	})
	require.NoError(t, err)
	ctx := ctxT(t)
	dead := make(chan actor.DeadLetter, 64)
	cancel := sys.SubscribeDeadLetters(func(d actor.DeadLetter) {
		if errors.Is(d.Reason, ErrStoreFull) { // not the answers to sends nobody waits for
			dead <- d
		}
	})
	defer cancel()

	sys.SendContext(WithKey(ctx, "s-1"), pid, &testpb.Echo{Text: "once"})
	sys.SendContext(WithKey(ctx, "s-1"), pid, &testpb.Echo{Text: "twice"})
	r, err := sys.Request(ctx, pid, &testpb.Echo{Text: "marker"})
	require.NoError(t, err)
	require.Equal(t, "did marker", r.(*testpb.Echo).Text)
	require.Equal(t, "once", <-runs)
	require.Equal(t, "marker", <-runs, "the repeat of s-1 was not handled")

	res := make(chan any, 1)
	go func() {
		v, err := sys.Request(WithKey(ctx, "st-1"), pid, &testpb.Echo{Text: "stash"})
		if err != nil {
			res <- err
			return
		}
		res <- v
	}()
	eventually(t, 10*time.Second, "the request stashed", func() bool { return g.waiting("st-1") == 0 })
	sys.Send(pid, &testpb.Echo{Text: "unstash"})
	v := <-res
	require.IsType(t, &testpb.Echo{}, v, "%v", v)
	require.Equal(t, "did stash", v.(*testpb.Echo).Text)
	require.Equal(t, "stash", <-runs)

	sys.SendContext(WithKey(ctx, "s-3"), pid, &testpb.Echo{Text: "refused"}) // the store holds 2 keys
	select {
	case d := <-dead:
		require.Equal(t, "refused", d.Message.(*testpb.Echo).Text)
	case <-ctx.Done():
		t.Fatal("no dead letter for the refused send")
	}
	_, err = sys.Request(ctx, pid, &testpb.Echo{Text: "marker"})
	require.NoError(t, err)
	require.Equal(t, "marker", <-runs, "the refused send was not handled")
}
