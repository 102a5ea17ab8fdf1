package actor

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// newClockedSystem starts a system on a fake clock.
func newClockedSystem(t testing.TB, name string) (*System, *FakeClock) {
	t.Helper()
	clk := NewFakeClock()
	s, err := Start(Config{Name: name, Logger: DiscardLogger(), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, s.Stop(ctx))
	})
	return s, clk
}

// stamped is a message an actor received and the fake time it saw.
type stamped struct {
	msg any
	at  time.Duration // since the clock's start
}

// timed is an actor that runs setup on Started, answers "sync" (a
// request the test uses as a barrier: whatever a timer queued before it
// has been handled when it returns) and reports everything else it
// receives, stamped, to out. do, when set, runs for other messages too.
type timed struct {
	clk   *FakeClock
	start time.Time
	out   chan stamped
	setup func(c *Context)
	do    func(c *Context)
}

func newTimed(clk *FakeClock, setup func(c *Context)) *timed {
	return &timed{clk: clk, start: clk.Now(), out: make(chan stamped, 4096), setup: setup}
}

func (a *timed) Receive(c *Context) {
	switch c.Message() {
	case Started{}:
		if a.setup != nil {
			a.setup(c)
		}
		return
	case Stopping{}, Stopped{}:
		return
	case "sync":
		c.Respond("synced")
		return
	}
	a.out <- stamped{msg: c.Message(), at: a.clk.Now().Sub(a.start)}
	if a.do != nil {
		a.do(c)
	}
}

func (a *timed) props() *Props { return PropsFromProducer(func() Actor { return a }) }

// barrier makes sure pid has handled what was queued for it before.
func barrier(t *testing.T, s *System, pid PID) {
	t.Helper()
	_, err := s.Request(ctxT(t), pid, "sync")
	require.NoError(t, err)
}

// none asserts that nothing was reported.
func none(t *testing.T, out <-chan stamped) {
	t.Helper()
	select {
	case m := <-out:
		t.Fatalf("unexpected %v at %v", m.msg, m.at)
	default:
	}
}

// waiting is the number of messages waiting in pid's mailbox, not
// counting the batch it works through.
func waiting(s *System, pid PID) int {
	p := s.local(pid)
	p.mb.mu.Lock()
	defer p.mb.mu.Unlock()
	return len(p.mb.user)
}

func recvStamped(t *testing.T, out <-chan stamped) stamped {
	t.Helper()
	select {
	case m := <-out:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
		return stamped{}
	}
}

func TestSendAfterDeliversOnceAfterD(t *testing.T) {
	s, clk := newClockedSystem(t, "n")
	var tm Timer
	a := newTimed(clk, func(c *Context) { tm = c.SendAfter(100*time.Millisecond, "tick") })
	pid, err := s.Spawn(a.props())
	require.NoError(t, err)
	clk.Advance(99 * time.Millisecond)
	barrier(t, s, pid)
	none(t, a.out)
	clk.Advance(time.Millisecond)
	require.Equal(t, stamped{"tick", 100 * time.Millisecond}, recvStamped(t, a.out))
	clk.Advance(time.Hour)
	barrier(t, s, pid)
	none(t, a.out)
	require.False(t, tm.Stop(), "a delivered one-shot timer has nothing left to stop")
	require.Zero(t, PendingTimers(s))
}

func TestSendEveryTicksUntilStopped(t *testing.T) {
	s, clk := newClockedSystem(t, "n")
	var tm Timer
	a := newTimed(clk, func(c *Context) { tm = c.SendEvery(10*time.Millisecond, "tick") })
	var ticks int
	a.do = func(c *Context) {
		if ticks++; ticks == 3 && !tm.Stop() {
			panic("a running periodic timer would not stop")
		}
	}
	pid, err := s.Spawn(a.props())
	require.NoError(t, err)
	for i := 1; i <= 3; i++ {
		clk.Advance(10 * time.Millisecond)
		require.Equal(t, stamped{"tick", time.Duration(i) * 10 * time.Millisecond}, recvStamped(t, a.out))
	}
	barrier(t, s, pid)
	clk.Advance(time.Second)
	barrier(t, s, pid)
	none(t, a.out)
	require.Zero(t, PendingTimers(s))
}

func TestSendEveryKeepsNoBacklog(t *testing.T) {
	s, clk := newClockedSystem(t, "n")
	hold := make(chan struct{})
	a := newTimed(clk, func(c *Context) { c.SendEvery(10*time.Millisecond, "tick") })
	a.do = func(c *Context) {
		if c.Message() == "hold" {
			<-hold
		}
	}
	pid, err := s.Spawn(a.props())
	require.NoError(t, err)
	s.Send(pid, "hold")
	require.Equal(t, "hold", recvStamped(t, a.out).msg)
	for range 10 { // ten periods while the actor is busy: one tick waits, the rest are skipped
		clk.Advance(10 * time.Millisecond)
	}
	close(hold)
	barrier(t, s, pid)
	require.Equal(t, "tick", recvStamped(t, a.out).msg)
	none(t, a.out)
	clk.Advance(10 * time.Millisecond)
	require.Equal(t, stamped{"tick", 110 * time.Millisecond}, recvStamped(t, a.out), "ticks keep to the period")
}

// A timer stopped while its message waits in the mailbox never delivers:
// one-shot, periodic, replaced by key and cancelled by key.
func TestCancelAfterDueNeverDelivers(t *testing.T) {
	cases := map[string]struct {
		start  func(c *Context) Timer
		cancel func(c *Context, tm Timer) bool
		after  any // what the actor receives instead, if anything
	}{
		"SendAfter": {
			start:  func(c *Context) Timer { return c.SendAfter(10*time.Millisecond, "tick") },
			cancel: func(c *Context, tm Timer) bool { return tm.Stop() },
		},
		"SendEvery": {
			start:  func(c *Context) Timer { return c.SendEvery(10*time.Millisecond, "tick") },
			cancel: func(c *Context, tm Timer) bool { return tm.Stop() },
		},
		"CancelTimer": {
			start:  func(c *Context) Timer { c.StartTimer("k", 10*time.Millisecond, "tick"); return Timer{} },
			cancel: func(c *Context, _ Timer) bool { return c.CancelTimer("k") },
		},
		"CancelPeriodicTimer": {
			start:  func(c *Context) Timer { c.StartPeriodicTimer("k", 10*time.Millisecond, "tick"); return Timer{} },
			cancel: func(c *Context, _ Timer) bool { return c.CancelTimer("k") },
		},
		"StartTimer replaces": {
			start: func(c *Context) Timer { c.StartTimer("k", 10*time.Millisecond, "tick"); return Timer{} },
			cancel: func(c *Context, _ Timer) bool {
				c.StartTimer("k", 5*time.Millisecond, "replacement")
				return true
			},
			after: "replacement",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, clk := newClockedSystem(t, "n")
			hold, stopped := make(chan struct{}), make(chan bool, 1)
			var tm Timer
			a := newTimed(clk, nil)
			a.do = func(c *Context) {
				switch c.Message() {
				case "start":
					tm = tc.start(c)
				case "hold":
					<-hold // meanwhile the timer comes due and its message is queued
					stopped <- tc.cancel(c, tm)
				}
			}
			pid, err := s.Spawn(a.props())
			require.NoError(t, err)
			s.Send(pid, "start")
			s.Send(pid, "hold")
			recvStamped(t, a.out)
			recvStamped(t, a.out)
			clk.Advance(10 * time.Millisecond) // due: queued behind "hold"
			eventually(t, "the timer's message is queued", func() bool { return waiting(s, pid) == 1 })
			close(hold)
			require.True(t, <-stopped, "stopping a timer whose message waits prevents its delivery")
			barrier(t, s, pid)
			clk.Advance(time.Second)
			barrier(t, s, pid)
			if tc.after != nil {
				require.Equal(t, tc.after, recvStamped(t, a.out).msg)
			}
			none(t, a.out)
			require.Zero(t, PendingTimers(s))
			require.Zero(t, s.DeadLetters(), "a stopped timer is no dead letter")
		})
	}
}

func TestKeyedTimers(t *testing.T) {
	s, clk := newClockedSystem(t, "n")
	active := make(chan []bool, 1)
	a := newTimed(clk, func(c *Context) {
		c.StartTimer("once", 30*time.Millisecond, "first")
		c.StartTimer("once", 20*time.Millisecond, "second") // replaces: only "second", at 20 ms
		c.StartPeriodicTimer("tick", 15*time.Millisecond, "tick")
	})
	a.do = func(c *Context) {
		if c.Message() == "second" {
			active <- []bool{c.TimerActive("once"), c.TimerActive("tick")}
			c.StartPeriodicTimer("tick", 100*time.Millisecond, "slow") // replaces the 15 ms one
		}
	}
	pid, err := s.Spawn(a.props())
	require.NoError(t, err)
	clk.Advance(15 * time.Millisecond)
	require.Equal(t, stamped{"tick", 15 * time.Millisecond}, recvStamped(t, a.out))
	clk.Advance(5 * time.Millisecond)
	require.Equal(t, stamped{"second", 20 * time.Millisecond}, recvStamped(t, a.out))
	require.Equal(t, []bool{false, true}, <-active, "a delivered one-shot is no longer active")
	clk.Advance(100 * time.Millisecond)
	require.Equal(t, stamped{"slow", 120 * time.Millisecond}, recvStamped(t, a.out))
	barrier(t, s, pid)
	none(t, a.out)
	require.Equal(t, 1, PendingTimers(s))
}

// Timers due at the same time fire in the order they were started; in
// any case, in deadline order, and a stopped one never.
func TestTimersFireInOrder(t *testing.T) {
	s, clk := newClockedSystem(t, "n")
	rng := rand.New(rand.NewPCG(1, 2))
	type plan struct {
		i    int
		d    time.Duration
		stop bool
	}
	var plans []plan
	for i := range 2000 {
		plans = append(plans, plan{i: i, d: time.Duration(rng.IntN(50)) * time.Millisecond, stop: rng.IntN(4) == 0})
	}
	a := newTimed(clk, func(c *Context) {
		var stops []Timer
		for _, p := range plans {
			tm := c.SendAfter(p.d, p.i)
			if p.stop {
				stops = append(stops, tm)
			}
		}
		for _, tm := range stops {
			if !tm.Stop() {
				panic("a pending timer would not stop")
			}
		}
	})
	pid, err := s.Spawn(a.props())
	require.NoError(t, err)
	for range 60 {
		clk.Advance(time.Millisecond)
	}
	barrier(t, s, pid)
	want := slices.DeleteFunc(slices.Clone(plans), func(p plan) bool { return p.stop })
	slices.SortStableFunc(want, func(a, b plan) int { return int(a.d - b.d) })
	for _, p := range want {
		m := recvStamped(t, a.out)
		require.Equal(t, p.i, m.msg)
		require.GreaterOrEqual(t, m.at, p.d, "timer %d delivered early", p.i)
	}
	none(t, a.out)
	require.Zero(t, PendingTimers(s))
}

// The receive timeout fires only after d of silence: a message in the
// middle of the wait moves it.
func TestReceiveTimeoutAfterSilence(t *testing.T) {
	s, clk := newClockedSystem(t, "n")
	a := newTimed(clk, func(c *Context) { c.SetReceiveTimeout(100 * time.Millisecond) })
	pid, err := s.Spawn(a.props())
	require.NoError(t, err)
	start := clk.Now()

	clk.Advance(60 * time.Millisecond)
	s.Send(pid, "work") // silence starts again at 60 ms
	require.Equal(t, stamped{"work", 60 * time.Millisecond}, recvStamped(t, a.out))
	clk.Advance(40 * time.Millisecond) // 100 ms: the timer is due, but only 40 ms were silent
	eventually(t, "the timeout is armed for 160 ms", func() bool {
		next, ok := clk.Next()
		return ok && next.Sub(start) == 160*time.Millisecond
	})
	none(t, a.out)
	clk.Advance(59 * time.Millisecond)
	none(t, a.out)
	clk.Advance(time.Millisecond)
	require.Equal(t, stamped{ReceiveTimeout{}, 160 * time.Millisecond}, recvStamped(t, a.out))
	// And again after each further 100 ms of silence: ReceiveTimeout
	// itself is no message that ends it.
	eventually(t, "armed for 260 ms", func() bool {
		next, ok := clk.Next()
		return ok && next.Sub(start) == 260*time.Millisecond
	})
	clk.Advance(100 * time.Millisecond)
	require.Equal(t, stamped{ReceiveTimeout{}, 260 * time.Millisecond}, recvStamped(t, a.out))
}

func TestReceiveTimeoutFromPropsAndOff(t *testing.T) {
	s, clk := newClockedSystem(t, "n")
	a := newTimed(clk, nil)
	a.do = func(c *Context) {
		if _, ok := c.Message().(ReceiveTimeout); ok {
			c.SetReceiveTimeout(0)
		}
	}
	props := a.props()
	props.ReceiveTimeout = 50 * time.Millisecond
	pid, err := s.Spawn(props)
	require.NoError(t, err)
	clk.Advance(50 * time.Millisecond)
	require.Equal(t, stamped{ReceiveTimeout{}, 50 * time.Millisecond}, recvStamped(t, a.out))
	barrier(t, s, pid)
	clk.Advance(time.Second)
	barrier(t, s, pid)
	none(t, a.out)
	require.Zero(t, PendingTimers(s), "SetReceiveTimeout(0) turns it off")

	_, err = s.Spawn(&Props{Producer: props.Producer, ReceiveTimeout: -1})
	require.ErrorContains(t, err, "Props.ReceiveTimeout")
}

func TestSendCron(t *testing.T) {
	s, clk := newClockedSystem(t, "n") // 2030-01-01 00:00 UTC, a Tuesday
	a := newTimed(clk, func(c *Context) {
		if _, err := c.SendCron("*/15 * * * *", "quarter"); err != nil {
			panic(err)
		}
		if err := c.StartCronTimer("weekly", "30 9 * * MON", "monday"); err != nil {
			panic(err)
		}
	})
	_, err := s.Spawn(a.props())
	require.NoError(t, err)
	clk.Advance(15 * time.Minute)
	require.Equal(t, stamped{"quarter", 15 * time.Minute}, recvStamped(t, a.out))
	clk.Advance(15 * time.Minute)
	require.Equal(t, stamped{"quarter", 30 * time.Minute}, recvStamped(t, a.out))

	errs := make(chan []error, 1)
	_, err = s.SpawnFunc(func(c *Context) {
		if _, ok := c.Message().(Started); !ok {
			return
		}
		var out []error
		for _, expr := range []string{"61 * * * *", "* * * *", "TZ=", "CRON_TZ=Nowhere/Else * * * * *", "0 0 30 2 *"} {
			_, err := c.SendCron(expr, "x")
			out = append(out, err)
		}
		out = append(out, c.StartCronTimer("k", "nonsense", "x"))
		errs <- out
	})
	require.NoError(t, err)
	for _, err := range <-errs {
		require.ErrorContains(t, err, "mailroom: cron expression")
	}
	require.Equal(t, 2, PendingTimers(s), "a bad expression starts nothing")
}

func TestSystemSendAfter(t *testing.T) {
	s, clk := newClockedSystem(t, "n")
	a := newTimed(clk, nil)
	pid, err := s.Spawn(a.props())
	require.NoError(t, err)
	s.SendAfter(20*time.Millisecond, pid, "later")
	stopped := s.SendAfter(10*time.Millisecond, pid, "never")
	require.True(t, stopped.Stop())
	require.False(t, stopped.Stop())
	clk.Advance(20 * time.Millisecond)
	require.Equal(t, "later", recvStamped(t, a.out).msg)
	barrier(t, s, pid)
	none(t, a.out)

	// Pending when the node stops: a dead letter, ErrStopped.
	s2, _ := newClockedSystem(t, "m")
	var reasons []error
	s2.SubscribeDeadLetters(func(dl DeadLetter) { reasons = append(reasons, dl.Reason) })
	s2.SendAfter(time.Hour, pid, "too late")
	require.NoError(t, s2.Stop(ctxT(t)))
	require.Len(t, reasons, 1)
	require.ErrorIs(t, reasons[0], ErrStopped)
	tm := s2.SendAfter(time.Millisecond, pid, "after stop")
	require.False(t, tm.Stop())
	require.Len(t, reasons, 2)
}

// An actor's end stops its timers: none stays in the scheduler, none
// is a dead letter.
func TestActorEndStopsItsTimers(t *testing.T) {
	s, clk := newClockedSystem(t, "n")
	a := newTimed(clk, func(c *Context) {
		c.SendAfter(time.Second, "a")
		c.SendEvery(10*time.Millisecond, "b")
		c.StartTimer("k", time.Minute, "c")
		c.SetReceiveTimeout(time.Minute)
	})
	a.do = func(c *Context) { panic("crash") }
	pid, err := s.Spawn(a.props())
	require.NoError(t, err)
	require.Equal(t, 4, PendingTimers(s))
	clk.Advance(10 * time.Millisecond) // "b": the actor crashes on it
	require.Equal(t, "b", recvStamped(t, a.out).msg)
	eventually(t, "the actor ends", func() bool { return s.local(pid) == nil })
	require.Zero(t, PendingTimers(s))
	clk.Advance(time.Hour)
	require.Zero(t, s.DeadLetters())
}

// A hundred thousand pending timers take no goroutine each.
func TestPendingTimersTakeNoGoroutines(t *testing.T) {
	s := newSystem(t, "n") // the wall clock
	const n = 100_000
	before := runtime.NumGoroutine()
	done := make(chan struct{})
	pid, err := s.SpawnFunc(func(c *Context) {
		if c.Message() == "start" {
			for i := range n {
				c.SendAfter(time.Hour+time.Duration(i), i)
			}
			close(done)
		}
	})
	require.NoError(t, err)
	s.Send(pid, "start")
	<-done
	require.Equal(t, n, PendingTimers(s))
	require.LessOrEqual(t, runtime.NumGoroutine(), before+2, "goroutines with %d timers pending", n)
	require.NoError(t, s.StopActorWait(ctxT(t), pid))
	require.Zero(t, PendingTimers(s))
}

// Timers on the wall clock, started and stopped from many goroutines
// while they fire: each delivers at most once, none after Stop returned
// true (checked under -race).
func TestTimersConcurrentWallClock(t *testing.T) {
	s := newSystem(t, "n")
	var delivered atomic.Int64
	var timers = make(chan Timer, 1000)
	pid, err := s.SpawnFunc(func(c *Context) {
		switch c.Message() {
		case "start":
			for range 1000 {
				timers <- c.SendAfter(time.Duration(rand.IntN(2000))*time.Microsecond, "tick")
			}
			close(timers)
		case "tick":
			delivered.Add(1)
		case "sync":
			c.Respond("synced")
		}
	})
	require.NoError(t, err)
	s.Send(pid, "start")
	var stoppedN int64
	for tm := range timers {
		if rand.IntN(2) == 0 && tm.Stop() {
			stoppedN++
		}
	}
	eventually(t, "every timer delivered once or stopped", func() bool {
		return delivered.Load()+stoppedN == 1000 && PendingTimers(s) == 0
	})
	barrier(t, s, pid)
	require.Equal(t, int64(1000), delivered.Load()+stoppedN, "delivered after a successful Stop")
}
