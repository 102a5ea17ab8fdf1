package actor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestIncarnationIsFreshAndNonZero(t *testing.T) {
	a := newSystem(t, "n1")
	b := newSystem(t, "n1")
	require.NotZero(t, a.Incarnation())
	require.NotEqual(t, a.Incarnation(), b.Incarnation(), "every start draws a new incarnation")
}

func TestConfigValidation(t *testing.T) {
	_, err := Start(Config{Name: "bad name!"})
	require.ErrorContains(t, err, `Name "bad name!"`)
	_, err = Start(Config{Name: "ok", Throughput: -1})
	require.ErrorContains(t, err, "Throughput is -1")
	s, err := Start(Config{})
	require.NoError(t, err)
	require.Equal(t, "local", s.Name())
	require.Equal(t, 300, s.Config().Throughput)
	require.NoError(t, s.Stop(context.Background()))
}

func TestStartedFirstThenOrderPerSender(t *testing.T) {
	s := newSystem(t, "n")
	out := make(chan any, 20000)
	pid, err := s.Spawn(PropsFromProducer(func() Actor { return &recorder{out: out} }))
	require.NoError(t, err)
	require.IsType(t, Started{}, recv(t, out))
	for i := range 10000 {
		s.Send(pid, i)
	}
	for i := range 10000 {
		require.Equal(t, i, recv(t, out))
	}
}

func TestRequestRespond(t *testing.T) {
	s := newSystem(t, "n")
	pid, err := s.SpawnFunc(func(c *Context) {
		if q, ok := c.Message().(string); ok {
			c.Respond("hello " + q)
		}
	})
	require.NoError(t, err)
	r, err := s.Request(ctxT(t), pid, "world")
	require.NoError(t, err)
	require.Equal(t, "hello world", r)
}

func TestRequestRejection(t *testing.T) {
	s := newSystem(t, "n")
	errNope := errors.New("nope")
	pid, err := s.SpawnFunc(func(c *Context) {
		if _, ok := c.Message().(string); ok {
			c.RespondError(errNope)
		}
	})
	require.NoError(t, err)
	_, err = s.Request(ctxT(t), pid, "x")
	var re *RemoteError
	require.ErrorAs(t, err, &re)
	require.ErrorIs(t, err, errNope)
	require.Equal(t, Executed, Outcome(err))
}

func TestRequestToDeadOrStalePID(t *testing.T) {
	s := newSystem(t, "n")
	pid, err := s.SpawnFunc(func(c *Context) {})
	require.NoError(t, err)
	require.NoError(t, s.StopActorWait(ctxT(t), pid))

	_, err = s.Request(ctxT(t), pid, "x")
	require.ErrorIs(t, err, ErrNoProcess)
	require.Equal(t, NotExecuted, Outcome(err))

	live, err := s.SpawnFunc(func(c *Context) { c.Respond("yes") })
	require.NoError(t, err)
	stale := live
	stale.Incarnation++ // the same ID in another incarnation of this node
	_, err = s.Request(ctxT(t), stale, "x")
	require.ErrorIs(t, err, ErrNoProcess)
	before := s.DeadLetters()
	s.Send(stale, "x")
	require.Equal(t, before+1, s.DeadLetters(), "a stale PID never reaches a live actor")
}

func TestRequestTargetDiesBeforeAnswering(t *testing.T) {
	s := newSystem(t, "n")
	pid, err := s.SpawnFunc(func(c *Context) {
		if c.Message() == "die" {
			c.Stop(c.Self()) // takes the request, never answers
		}
	})
	require.NoError(t, err)
	_, err = s.Request(ctxT(t), pid, "die")
	require.ErrorIs(t, err, ErrNoProcess)
	require.Equal(t, MayHaveExecuted, Outcome(err), "it took the request before dying")
}

func TestRequestQueuedBehindDeathIsNotExecuted(t *testing.T) {
	s := newSystem(t, "n")
	release, entered := make(chan struct{}), make(chan struct{})
	pid, err := s.SpawnFunc(func(c *Context) {
		if c.Message() == "block" {
			close(entered)
			<-release
			c.Stop(c.Self())
		}
	})
	require.NoError(t, err)
	s.Send(pid, "block")
	<-entered
	res := make(chan error, 1)
	go func() { _, err := s.Request(context.Background(), pid, "later"); res <- err }()
	eventually(t, "request queued", func() bool { return queued(s, pid) == 1 })
	close(release)
	err = <-res
	require.ErrorIs(t, err, ErrNoProcess)
	require.Equal(t, NotExecuted, Outcome(err), "it was still queued")
}

func TestRequestCancelAndLateReply(t *testing.T) {
	s := newSystem(t, "n")
	hold := make(chan Replier, 1)
	pid, err := s.SpawnFunc(func(c *Context) {
		if _, ok := c.Message().(string); ok {
			hold <- c.Defer()
		}
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { _, err := s.Request(ctx, pid, "q"); res <- err }()
	r := <-hold
	cancel()
	err = <-res
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, MayHaveExecuted, Outcome(err))
	r.Reply("too late", nil)
	require.Equal(t, uint64(1), s.LateReplies())
}

func TestDeferredReply(t *testing.T) {
	s := newSystem(t, "n")
	pid, err := s.SpawnFunc(func(c *Context) {
		if _, ok := c.Message().(string); ok {
			r := c.Defer()
			go r.Reply("later", nil)
		}
	})
	require.NoError(t, err)
	v, err := s.Request(ctxT(t), pid, "q")
	require.NoError(t, err)
	require.Equal(t, "later", v)
}

func TestRespondToActorSender(t *testing.T) {
	s := newSystem(t, "n")
	echo, err := s.SpawnFunc(func(c *Context) {
		if m, ok := c.Message().(string); ok {
			c.Respond("echo:" + m)
		}
	})
	require.NoError(t, err)
	out := make(chan any, 4)
	_, err = s.SpawnFunc(func(c *Context) {
		switch m := c.Message().(type) {
		case Started:
			c.Send(echo, "hi")
		case string:
			out <- m
			out <- c.Sender()
		}
	})
	require.NoError(t, err)
	require.Equal(t, "echo:hi", recv(t, out))
	require.Equal(t, echo, recv(t, out))
}

func TestNamedActors(t *testing.T) {
	s := newSystem(t, "n")
	pid, err := s.SpawnNamed(PropsFromFunc(func(c *Context) {
		if _, ok := c.Message().(string); ok {
			c.Respond(c.Name())
		}
	}), "svc")
	require.NoError(t, err)
	got, ok := s.Lookup("svc")
	require.True(t, ok)
	require.Equal(t, pid, got)

	_, err = s.SpawnNamed(PropsFromFunc(func(c *Context) {}), "svc")
	require.ErrorIs(t, err, ErrNameTaken)
	require.ErrorContains(t, err, `name "svc"`)

	v, err := s.RequestNamed(ctxT(t), "n", "svc", "who")
	require.NoError(t, err)
	require.Equal(t, "svc", v)

	require.NoError(t, s.StopActorWait(ctxT(t), pid))
	_, ok = s.Lookup("svc")
	require.False(t, ok, "the name is released when the actor ends")
	_, err = s.SpawnNamed(PropsFromFunc(func(c *Context) {}), "svc")
	require.NoError(t, err)
}

func TestLifecycleOrder(t *testing.T) {
	s := newSystem(t, "n")
	events := make(chan string, 16)
	child := func(c *Context) {
		switch c.Message().(type) {
		case Started:
			events <- "child started"
		case Stopping:
			events <- "child stopping"
		case Stopped:
			events <- "child stopped"
		}
	}
	pid, err := s.SpawnFunc(func(c *Context) {
		switch c.Message().(type) {
		case Started:
			events <- "parent started"
			_, err := c.SpawnFunc(child)
			if err != nil {
				panic(err)
			}
		case Stopping:
			events <- "parent stopping"
		case Stopped:
			events <- "parent stopped"
		}
	})
	require.NoError(t, err)
	require.NoError(t, s.StopActorWait(ctxT(t), pid))
	close(events)
	var got []string
	for e := range events {
		got = append(got, e)
	}
	require.Equal(t, []string{"parent started", "child started", "parent stopping", "child stopping", "child stopped", "parent stopped"}, got)
}

func TestPanicIsACrashReportedToParentAndLogged(t *testing.T) {
	s, logs := newLoggedSystem(t, "n")
	out := make(chan any, 8)
	_, err := s.SpawnFunc(func(c *Context) {
		switch m := c.Message().(type) {
		case Started:
			kid, err := c.SpawnFunc(func(c *Context) {
				if c.Message() == "boom" {
					panic("kaboom")
				}
				if _, ok := c.Message().(Stopped); ok {
					out <- "kid stopped"
				}
			})
			if err != nil {
				panic(err)
			}
			c.Send(kid, "boom")
		case Terminated:
			out <- m
		}
	})
	require.NoError(t, err)
	require.Equal(t, "kid stopped", recv(t, out), "a crashed actor still gets Stopped")
	term := recv(t, out).(Terminated)
	var pe *PanicError
	require.ErrorAs(t, term.Reason, &pe)
	require.Equal(t, "kaboom", pe.Value)
	require.Contains(t, string(pe.Stack), "actor_test.go")
	require.Equal(t, Executed, Outcome(term.Reason))
	eventually(t, "crash logged", func() bool {
		l := logs.String()
		return strings.Contains(l, "actor crashed") && strings.Contains(l, "kaboom")
	})
}

func TestRequestToPanickingActorGetsPanicError(t *testing.T) {
	s := newSystem(t, "n")
	pid, err := s.SpawnFunc(func(c *Context) {
		if c.Message() == "q" {
			panic("bad")
		}
	})
	require.NoError(t, err)
	_, err = s.Request(ctxT(t), pid, "q")
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, Executed, Outcome(err))
}

func TestPanicInStartedFailsSpawn(t *testing.T) {
	s := newSystem(t, "n")
	n := s.NumActors()
	_, err := s.SpawnFunc(func(c *Context) {
		if _, ok := c.Message().(Started); ok {
			panic("init failed")
		}
	})
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, n, s.NumActors())
}

func TestWatchUnwatch(t *testing.T) {
	s := newSystem(t, "n")
	target, err := s.SpawnFunc(func(c *Context) {})
	require.NoError(t, err)
	gone, err := s.SpawnFunc(func(c *Context) {})
	require.NoError(t, err)
	require.NoError(t, s.StopActorWait(ctxT(t), gone))

	out := make(chan any, 8)
	w, err := s.SpawnFunc(func(c *Context) {
		switch m := c.Message().(type) {
		case string:
			switch m {
			case "watch":
				c.Watch(target)
				c.Watch(gone)
				c.Respond(true)
			case "unwatch":
				c.Unwatch(target)
				c.Respond(true)
			}
		case Terminated:
			out <- m
		}
	})
	require.NoError(t, err)
	_, err = s.Request(ctxT(t), w, "watch")
	require.NoError(t, err)
	t1 := recv(t, out).(Terminated)
	require.Equal(t, gone, t1.PID)
	require.ErrorIs(t, t1.Reason, ErrNoProcess)

	s.StopActor(target)
	t2 := recv(t, out).(Terminated)
	require.Equal(t, target, t2.PID)
	require.NoError(t, t2.Reason, "a normal stop has no reason")

	// Unwatch: no Terminated arrives.
	t3, err := s.SpawnFunc(func(c *Context) {})
	require.NoError(t, err)
	target = t3
	_, err = s.Request(ctxT(t), w, "watch")
	require.NoError(t, err)
	recv(t, out) // gone again
	_, err = s.Request(ctxT(t), w, "unwatch")
	require.NoError(t, err)
	require.NoError(t, s.StopActorWait(ctxT(t), t3))
	_, err = s.Request(ctxT(t), w, "unwatch") // a round trip after the stop
	require.NoError(t, err)
	select {
	case m := <-out:
		t.Fatalf("unexpected %v after Unwatch", m)
	default:
	}
}

func TestPoisonPillAfterQueuedMessages(t *testing.T) {
	s := newSystem(t, "n")
	out := make(chan any, 8)
	pid, err := s.Spawn(PropsFromProducer(func() Actor { return &recorder{out: out} }))
	require.NoError(t, err)
	recv(t, out) // Started
	s.Send(pid, 1)
	s.Send(pid, PoisonPill{})
	s.Send(pid, 2)
	require.Equal(t, 1, recv(t, out))
	require.IsType(t, Stopping{}, recv(t, out))
	require.IsType(t, Stopped{}, recv(t, out))
	eventually(t, "dead letter for 2", func() bool { return s.DeadLetters() >= 1 })
}

func TestDeadLettersCountedAndSubscribed(t *testing.T) {
	s := newSystem(t, "n")
	var got atomic.Int64
	var last atomic.Value
	cancel := s.SubscribeDeadLetters(func(d DeadLetter) {
		got.Add(1)
		last.Store(d)
	})
	pid, err := s.SpawnFunc(func(c *Context) {})
	require.NoError(t, err)
	require.NoError(t, s.StopActorWait(ctxT(t), pid))
	s.Send(pid, "lost")
	require.Equal(t, uint64(1), s.DeadLetters())
	require.Equal(t, int64(1), got.Load())
	d := last.Load().(DeadLetter)
	require.Equal(t, pid, d.To)
	require.Equal(t, "lost", d.Message)
	require.ErrorIs(t, d.Reason, ErrNoProcess)
	cancel()
	s.Send(pid, "lost again")
	require.Equal(t, uint64(2), s.DeadLetters())
	require.Equal(t, int64(1), got.Load(), "unsubscribed")
}

func TestBoundedMailboxFailFast(t *testing.T) {
	s := newSystem(t, "n")
	release := make(chan struct{})
	pid, err := s.Spawn(PropsFromFunc(func(c *Context) {
		if c.Message() == "block" {
			<-release
		}
	}).WithMailbox(3, FailFast))
	require.NoError(t, err)
	s.Send(pid, "block")
	eventually(t, "block taken", func() bool { return queued(s, pid) == 0 })
	// "block" is being processed (pending 1); two more fit.
	require.NoError(t, s.TrySend(pid, 1))
	require.NoError(t, s.TrySend(pid, 2))
	err = s.TrySend(pid, 3)
	require.ErrorIs(t, err, ErrMailboxFull)
	require.Equal(t, NotExecuted, Outcome(err))
	_, err = s.Request(ctxT(t), pid, 4)
	require.ErrorIs(t, err, ErrMailboxFull)
	before := s.DeadLetters()
	s.Send(pid, 5)
	require.Equal(t, before+1, s.DeadLetters(), "Send to a full FailFast mailbox is a counted dead letter")
	close(release)
}

func TestBoundedMailboxBlocks(t *testing.T) {
	s := newSystem(t, "n")
	release := make(chan struct{})
	var handled atomic.Int64
	pid, err := s.Spawn(PropsFromFunc(func(c *Context) {
		switch c.Message() {
		case "block":
			<-release
		case "x":
			handled.Add(1)
		}
	}).WithMailbox(2, Block))
	require.NoError(t, err)
	s.Send(pid, "block")
	s.Send(pid, "x")
	sent := make(chan struct{})
	go func() { s.Send(pid, "x"); close(sent) }()
	select {
	case <-sent:
		t.Fatal("Send did not block on a full Block mailbox")
	case <-time.After(50 * time.Millisecond): // the behaviour under test is "still blocked"
	}
	close(release)
	<-sent
	eventually(t, "both handled", func() bool { return handled.Load() == 2 })
}

func TestBlockedSenderReleasedWhenTargetDies(t *testing.T) {
	s := newSystem(t, "n")
	release := make(chan struct{})
	pid, err := s.Spawn(PropsFromFunc(func(c *Context) {
		if c.Message() == "block" {
			<-release
			c.Stop(c.Self())
		}
	}).WithMailbox(1, Block))
	require.NoError(t, err)
	s.Send(pid, "block")
	done := make(chan struct{})
	go func() { s.Send(pid, "a"); s.Send(pid, "b"); close(done) }()
	close(release)
	<-done
	eventually(t, "queued messages dead-lettered", func() bool { return s.DeadLetters() >= 1 })
}

func TestIdleActorsHoldNoGoroutine(t *testing.T) {
	s := newSystem(t, "n")
	base := runtime.NumGoroutine()
	var n atomic.Int64
	pids := make([]PID, 5000)
	for i := range pids {
		pid, err := s.SpawnFunc(func(c *Context) {
			if _, ok := c.Message().(int); ok {
				n.Add(1)
			}
		})
		require.NoError(t, err)
		pids[i] = pid
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), base+2, "spawning schedules nothing")
	for i, p := range pids {
		s.Send(p, i)
	}
	eventually(t, "all handled", func() bool { return n.Load() == int64(len(pids)) })
	eventually(t, "goroutines back to base", func() bool { return runtime.NumGoroutine() <= base+2 })
}

func TestBusyActorDoesNotStarveOthers(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	s := newSystem(t, "n")
	var busyDone atomic.Int64
	const total = 300000
	busy, err := s.SpawnFunc(func(c *Context) {
		if _, ok := c.Message().(int); ok {
			busyDone.Add(1)
		}
	})
	require.NoError(t, err)
	other, err := s.SpawnFunc(func(c *Context) {
		if c.Message() == "ping" {
			c.Respond(busyDone.Load())
		}
	})
	require.NoError(t, err)
	for i := range total {
		s.Send(busy, i)
	}
	v, err := s.Request(ctxT(t), other, "ping")
	require.NoError(t, err)
	require.Less(t, v.(int64), int64(total), "the other actor was served while the busy one still had work")
}

func TestStopWaitsForEveryActorAndLeaksNothing(t *testing.T) {
	s, err := Start(Config{Name: "n", Logger: DiscardLogger()})
	require.NoError(t, err)
	var stopped atomic.Int64
	var spawnTree func(depth int) ReceiveFunc
	spawnTree = func(depth int) ReceiveFunc {
		return func(c *Context) {
			switch c.Message().(type) {
			case Started:
				if depth > 0 {
					for range 3 {
						if _, err := c.SpawnFunc(spawnTree(depth - 1)); err != nil {
							panic(err)
						}
					}
				}
			case Stopped:
				stopped.Add(1)
			}
		}
	}
	for range 4 {
		_, err := s.SpawnFunc(spawnTree(3))
		require.NoError(t, err)
	}
	require.Equal(t, 4*(1+3+9+27), s.NumActors())
	require.NoError(t, s.Stop(ctxT(t)))
	require.Equal(t, int64(4*(1+3+9+27)), stopped.Load())
	require.Zero(t, s.NumActors())
	_, err = s.SpawnFunc(func(c *Context) {})
	require.ErrorIs(t, err, ErrStopped)
	require.NoError(t, s.Stop(ctxT(t)), "Stop is idempotent")
}

func TestStopReportsWhatDidNotFinish(t *testing.T) {
	s, err := Start(Config{Name: "n", Logger: DiscardLogger()})
	require.NoError(t, err)
	release, entered := make(chan struct{}), make(chan struct{})
	pid, err := s.SpawnFunc(func(c *Context) {
		if c.Message() == "wedge" {
			close(entered)
			<-release
		}
	})
	require.NoError(t, err)
	s.Send(pid, "wedge")
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = s.Stop(ctx)
	require.ErrorContains(t, err, "1 actors still running")
	close(release)
	eventually(t, "actor gone", func() bool { return s.NumActors() == 0 })
}

func TestErrorTextNamesOperationTargetAndMeaning(t *testing.T) {
	err := NewError("call", "orders-1", 0xabc, "charge", ErrNodeDown)
	require.Equal(t, "mailroom: call on node orders-1 (incarnation 0000000000000abc) to charge: node down: may have executed; check before retrying", err.Error())
	require.Equal(t, MayHaveExecuted, Outcome(err))
	require.Equal(t, NotExecuted, Outcome(fmt.Errorf("wrapped: %w", ErrUnreachable)))
	require.Equal(t, Executed, Outcome(nil))
	require.Equal(t, MayHaveExecuted, Outcome(errors.New("unknown")))
}

// queued is the number of user messages waiting (not taken) in pid's mailbox.
func queued(s *System, pid PID) int {
	p := s.procs.get(pid.ID)
	p.mb.mu.Lock()
	defer p.mb.mu.Unlock()
	return len(p.mb.user)
}

func TestExitWithReason(t *testing.T) {
	s := newSystem(t, "n")
	errGaveUp := errors.New("gave up")
	out := make(chan any, 4)
	_, err := s.SpawnFunc(func(c *Context) {
		switch m := c.Message().(type) {
		case Started:
			kid, _ := c.SpawnFunc(func(c *Context) {
				switch c.Message().(type) {
				case string:
					c.Exit(errGaveUp)
				case Stopping:
					out <- "child stopping"
				}
			})
			c.Send(kid, "give up")
		case Terminated:
			out <- m.Reason
		}
	})
	require.NoError(t, err)
	require.Equal(t, "child stopping", recv(t, out), "Exit still delivers Stopping")
	require.Equal(t, errGaveUp, recv(t, out))
}

// batcher records the batches it is given.
type batcher struct {
	limit int
	gate  chan struct{}
	out   chan []any
}

func (b *batcher) Receive(c *Context) {
	if c.Message() == "req" {
		c.Respond("answered")
	}
}

func (b *batcher) ReceiveBatch(c *Context, msgs []any) {
	<-b.gate
	b.out <- append([]any(nil), msgs...)
}

func (b *batcher) BatchLimit() int { return b.limit }

func TestBatchReceiverTakesWhatIsWaitingUpToTheLimit(t *testing.T) {
	s := newSystem(t, "n")
	b := &batcher{limit: 2, gate: make(chan struct{}), out: make(chan []any, 10)}
	pid, err := s.Spawn(PropsFromProducer(func() Actor { return b }))
	require.NoError(t, err)
	s.Send(pid, 0) // taken alone; the actor then blocks at the gate
	eventually(t, "first taken", func() bool { return queued(s, pid) == 0 })
	for i := 1; i <= 5; i++ {
		s.Send(pid, i)
	}
	close(b.gate)
	var got [][]any
	for range 4 {
		got = append(got, <-b.out)
	}
	require.Equal(t, [][]any{{0}, {1, 2}, {3, 4}, {5}}, got)
	v, err := s.Request(ctxT(t), pid, "req")
	require.NoError(t, err, "requests still reach Receive")
	require.Equal(t, "answered", v)
}

func TestExitInStartedFailsSpawnAndLeavesNothing(t *testing.T) {
	s := newSystem(t, "n")
	errInit := errors.New("bad config")
	for range 50 {
		_, err := s.SpawnNamed(PropsFromFunc(func(c *Context) {
			if _, ok := c.Message().(Started); ok {
				for range 3 {
					_, _ = c.SpawnFunc(func(*Context) {})
				}
				c.Exit(errInit)
			}
		}), "root")
		require.ErrorIs(t, err, errInit)
		_, taken := s.Lookup("root")
		require.False(t, taken, "the name is free as soon as Spawn returns")
		require.Zero(t, s.NumActors(), "nothing remains, children included")
	}
	_, err := s.SpawnFunc(func(c *Context) {
		if _, ok := c.Message().(Started); ok {
			panic(fmt.Errorf("wrapped: %w", errInit))
		}
	})
	require.ErrorIs(t, err, errInit, "PanicError unwraps an error value")
}

func TestDeferredRequestLearnsTheCrash(t *testing.T) {
	s := newSystem(t, "n")
	held := make(chan struct{})
	pid, err := s.SpawnFunc(func(c *Context) {
		switch c.Message() {
		case "hold":
			_ = c.Defer()
			close(held)
		case "crash":
			panic("boom")
		}
	})
	require.NoError(t, err)
	res := make(chan error, 1)
	go func() { _, err := s.Request(context.Background(), pid, "hold"); res <- err }()
	<-held
	s.Send(pid, "crash")
	err = <-res
	require.ErrorIs(t, err, ErrNoProcess)
	var pe *PanicError
	require.ErrorAs(t, err, &pe, "the reason travels with it")
	require.Equal(t, MayHaveExecuted, Outcome(err))
}
