package observer

import (
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// fakeClock is an actor.Clock moved by hand: Advance runs the functions
// that came due, on the caller's goroutine, in deadline order.
type fakeClock struct {
	mu     sync.Mutex // protects following
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// pending is how many functions are scheduled and not stopped.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		var next *fakeTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			break
		}
		next.stopped = true
		c.now = next.at
		c.mu.Unlock()
		next.f()
		c.mu.Lock()
	}
	c.now = end
	c.mu.Unlock()
}

// TestSamplerRates: on a clock stepped by hand, each sample schedules the
// next; counters become rates over the interval before each sample and
// levels stay levels; the ring keeps the last points only; stop is
// idempotent and leaves nothing scheduled.
func TestSamplerRates(t *testing.T) {
	clk := newFakeClock()
	var cur point
	closing := false
	read := func() point { p := cur; p.at = clk.Now(); return p }
	s := newSampler(clk, time.Second, 4, read, func() bool { return closing })
	require.Equal(t, 1, clk.pending(), "the next sample scheduled")

	got := s.series()
	require.Empty(t, got.AtMs, "one point: no rate yet")
	require.Len(t, got.Charts, len(charts))

	// Five seconds: 10 sends a second, 2 not-executed failures, then a
	// pending level of 3.
	for i := range 5 {
		cur.sent += 10
		cur.failed[actor.NotExecuted] += 2
		cur.pending = int64(i)
		clk.Advance(time.Second)
	}
	got = s.series()
	require.Equal(t, int64(1000), got.EveryMs)
	require.Len(t, got.AtMs, 3, "4 points kept: 3 intervals")
	require.Equal(t, clk.Now().UnixMilli(), got.AtMs[2])
	byName := map[string]Chart{}
	for _, c := range got.Charts {
		byName[c.Name] = c
	}
	require.Equal(t, "sent", byName["messages"].Lines[0].Label)
	require.Equal(t, []float64{10, 10, 10}, byName["messages"].Lines[0].Values)
	require.Equal(t, []float64{0, 0, 0}, byName["messages"].Lines[1].Values, "nothing received")
	failures := byName["failures"]
	require.Equal(t, "/s", failures.Unit)
	require.Equal(t, actor.NotExecuted.Label(), failures.Lines[0].Label)
	require.Equal(t, []float64{2, 2, 2}, failures.Lines[0].Values)
	require.Equal(t, actor.MayHaveExecuted.Label(), failures.Lines[1].Label)
	require.Equal(t, []float64{2, 3, 4}, byName["pending"].Lines[0].Values, "a level, not a rate")
	require.Empty(t, byName["pending"].Unit)

	s.stop()
	s.stop()
	require.Zero(t, clk.pending(), "nothing scheduled after stop")
	clk.Advance(time.Hour)
	require.Len(t, s.series().AtMs, 3, "no sample after stop")

	// A System that stops: the sample that sees it schedules nothing more.
	s2 := newSampler(clk, time.Second, 10, read, func() bool { return closing })
	closing = true
	clk.Advance(time.Second)
	require.Zero(t, clk.pending())
	require.Len(t, s2.series().AtMs, 1)
	s2.stop()
}

// TestSeriesLive: a node's observer samples its counters from the start:
// calls to another node show as a rate of calls made and messages sent,
// a failure as its outcome's rate; the system's stop ends the sampling
// (goleak checks nothing is left).
func TestSeriesLive(t *testing.T) {
	a, b := startNode(t, "a"), startNode(t, "b")
	srv := httptest.NewServer(Handler(a.n, Options{SeriesEvery: 100 * time.Millisecond, SeriesPoints: 50, MinInterval: 50 * time.Millisecond}))
	t.Cleanup(srv.Close)
	require.NoError(t, a.n.Connect(ctxT(t), "b", b.n.Addr()))
	for range 30 {
		_, err := a.sys.Call(ctxT(t), "b", "echo", &testpb.Echo{Text: "hi"})
		require.NoError(t, err)
	}
	_, err := a.sys.Call(ctxT(t), "b", "no_such_function", &testpb.Echo{})
	require.ErrorIs(t, err, actor.ErrNoFunction)

	sum := func(s Series, chart, line string) float64 {
		var total float64
		for _, c := range s.Charts {
			for _, l := range c.Lines {
				if c.Name == chart && l.Label == line {
					require.Len(t, l.Values, len(s.AtMs))
					for _, v := range l.Values {
						total += v
					}
				}
			}
		}
		return total
	}
	var s Series
	eventually(t, "the calls and the failure in the series", func() bool {
		getJSON(t, srv.URL+"/api/series", &s)
		return sum(s, "calls", "made") > 0 && sum(s, "messages", "sent") > 0 && sum(s, "failures", actor.NotExecuted.Label()) > 0
	})
	require.Zero(t, sum(s, "failures", actor.MayHaveExecuted.Label()))
	require.LessOrEqual(t, len(s.AtMs), 49)
	require.Equal(t, int64(100), s.EveryMs)
}
