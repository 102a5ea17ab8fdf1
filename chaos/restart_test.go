//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// life is one incarnation of the restarted node.
type life struct {
	inc         uint64
	born, ended time.Time
	ctr         *Counters
}

// callLog records every call the callers made.
type callLog struct {
	mu    sync.Mutex // protects calls
	calls []call
}

func (l *callLog) add(c call) {
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
}

// startCallers runs n goroutines on sys, each calling whoami on node in a
// loop with its own sender, until the returned stop function is called
// (at the latest when the test ends).
func startCallers(t testing.TB, sys *actor.System, n int, node string, log *callLog) (stop func(), wg *sync.WaitGroup) {
	wg = new(sync.WaitGroup)
	done := make(chan struct{})
	var once sync.Once
	stop = func() { once.Do(func() { close(done) }) }
	t.Cleanup(func() { stop(); wg.Wait() })
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sys.NewSender()
			for {
				select {
				case <-done:
					return
				default:
				}
				start := time.Now()
				v, err := h.Call(context.Background(), node, "whoami", &testpb.Echo{})
				log.add(call{err: err, reply: v, start: start, end: time.Now()})
				if err != nil {
					time.Sleep(5 * time.Millisecond) // load pacing, not synchronisation
				}
			}
		}()
	}
	return stop, wg
}

// freePort is a loopback port free now, for a child process to bind
// later (and again after each restart). It is taken below the kernel's
// ephemeral range, so that no socket the kernel numbers itself (a
// connection's local end, a listener on port 0) can take it in between:
// a port from that range was now and then taken by a dial's local end
// ("bind: address already in use").
func freePort(t *testing.T) int {
	t.Helper()
	low := 32768 // Linux's default ip_local_port_range start
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	const first = 10000
	if low-first < 1000 {
		// No room below it: a port the kernel picks.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port
	}
	for range 200 {
		port := first + rand.IntN(low-first)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // in use: another
		}
		ln.Close()
		return port
	}
	t.Fatalf("no free loopback port in [%d, %d)", first, low)
	return 0
}

// TestRestartUnderLoad: b is restarted 20 times under the same name and
// address (SIGKILL and graceful stop in turn) while a floods it with sends
// by name, d's 20 callers call it, and a keeps sending to a sink PID of
// its first incarnation. Every call ends, with a documented class; a call
// is only ever answered by an incarnation that was alive while it ran; no
// message to the dead incarnation's PID reaches a later one; each
// incarnation saw every sender's messages in order; the pools never wrote
// into another incarnation; a's goroutines come back to where they were.
func TestRestartUnderLoad(t *testing.T) {
	const restarts = 20
	sc := newScenario(t, fmt.Sprintf("restart-%d", restarts))
	port := freePort(t)
	bOpts := testnode.Options{Name: "b", Listen: "127.0.0.1:" + strconv.Itoa(port), Extra: floodSinkExtra()}
	seed := "b=127.0.0.1:" + strconv.Itoa(port)
	var lives []*life
	start := func() *testnode.Child {
		born := time.Now() // the process may answer before it reports READY
		c, ctr := startChild(t, bOpts)
		lives = append(lives, &life{inc: c.Incarnation, born: born, ctr: ctr})
		return c
	}
	b := start()
	a := startLocal(t, "a", remote.Config{Seeds: []string{seed}}, nil)
	d := startLocal(t, "d", remote.Config{Seeds: []string{seed}}, nil)
	require.NoError(t, a.n.Connect(ctxFor(t, 10*time.Second), "b", ""))
	require.NoError(t, d.n.Connect(ctxFor(t, 10*time.Second), "b", ""))
	v, err := d.sys.Call(ctxFor(t, 10*time.Second), "b", "pid_of", &testpb.Echo{Text: SinkName(0)})
	require.NoError(t, err)
	stalePID, err := actor.ParsePID(v.(*testpb.Echo).Text)
	require.NoError(t, err)
	runtime.GC()
	g0 := runtime.NumGoroutine()
	led := openLedger(a, "b")

	f := startFlood(t, a.sys, 500, 0, func(i int) (string, string) { return "b", SinkName(i % floodSinks) })
	var calls callLog
	stopCallers, callers := startCallers(t, d.sys, 20, "b", &calls)
	var staleSent, staleRefused int
	var recoveries []time.Duration
	for k := range restarts {
		cur := lives[len(lives)-1]
		eventually(t, 30*time.Second, "the new incarnation answering", func() bool {
			v, err := d.sys.Call(ctxFor(t, 5*time.Second), "b", "whoami", &testpb.Echo{})
			return err == nil && v.(*testpb.Echo).Text == strconv.FormatUint(cur.inc, 16)
		})
		recoveries = append(recoveries, time.Since(cur.born))
		eventually(t, 30*time.Second, "sends delivered to the new incarnation", func() bool { return cur.ctr.Load(Delivered) > 1000 })
		if k%2 == 0 {
			b.Kill()
		} else {
			require.NoError(t, b.Stop(15*time.Second))
		}
		cur.ended = time.Now()
		// The first incarnation is gone: its PIDs must reach nobody.
		for range 100 {
			a.sys.Send(stalePID, &testpb.Echo{Text: StaleMark, N: 1})
			staleSent++
		}
		_, err := a.sys.Request(ctxFor(t, 10*time.Second), stalePID, &testpb.Echo{Text: StaleMark})
		if err != nil {
			staleRefused++
		}
		b = start()
	}
	eventually(t, 30*time.Second, "the last incarnation answering", func() bool {
		_, err := d.sys.Call(ctxFor(t, 5*time.Second), "b", "whoami", &testpb.Echo{})
		return err == nil
	})
	stopCallers()
	callersDone := waitGroupWithin(callers, 30*time.Second)
	hungWriters := f.halt(30 * time.Second)
	bk := led.close(t, f.attempted()+int64(staleSent)) // stale sends are refused and counted too
	last := lives[len(lives)-1]
	settle(t, 30*time.Second, 300*time.Millisecond, func() int64 { return last.ctr.Load(Delivered) })
	runtime.GC()
	g1 := runtime.NumGoroutine()

	var total Snapshot
	for _, l := range lives {
		total = total.Sum(l.ctr.Snapshot())
	}
	cls := newClasses()
	wrongInc := 0
	for _, c := range calls.calls {
		cls.add(c.err)
		if c.err == nil && !answeredByALiveIncarnation(c, lives) {
			wrongInc++
		}
	}
	slices.Sort(recoveries)
	lost := bk.written - total.Get(Delivered) - total.Get(DeadLetters)
	guard := poolStats(a, "b").GuardViolations + poolStats(d, "b").GuardViolations

	sc.set("restarts", restarts)
	sc.set("calls", len(calls.calls))
	sc.set("classes", cls.String())
	sc.set("answered_by_wrong_incarnation", wrongInc)
	sc.set("callers_hung", !callersDone)
	sc.set("recovery_median_ms", recoveries[len(recoveries)/2])
	sc.set("recovery_max_ms", recoveries[len(recoveries)-1])
	bk.record(sc)
	sc.set("delivered", total.Get(Delivered))
	sc.set("b_dead_letters", total.Get(DeadLetters))
	sc.set("lost_in_flight_at_stops", lost)
	sc.set("out_of_order", total.Get(OutOfOrder))
	sc.set("stale_sent", staleSent)
	sc.set("stale_delivered", total.Get(Stale))
	sc.set("stale_requests_refused", staleRefused)
	sc.set("guard_violations", guard)
	sc.set("writers_hung", hungWriters)
	sc.set("a_goroutines_before", g0)
	sc.set("a_goroutines_after", g1)

	require.True(t, callersDone, "callers blocked in calls that never ended")
	require.Empty(t, cls.wrong, "calls failed with the wrong class")
	require.Zero(t, wrongInc, "a call answered by an incarnation that was not alive while it ran")
	require.Zero(t, hungWriters)
	bk.check(t)
	require.GreaterOrEqual(t, lost, int64(0))
	require.Zero(t, total.Get(OutOfOrder), "per-sender order broken within an incarnation")
	require.Zero(t, total.Get(Stale), "a message to a dead incarnation's PID reached an actor")
	require.Equal(t, restarts, staleRefused, "a request to a dead incarnation's PID must fail")
	require.Zero(t, guard, "a pool wrote into another incarnation")
	require.Less(t, g1, g0+50, "goroutines leaked across restarts")
}

// answeredByALiveIncarnation: the incarnation that answered c was alive
// at some time between the call's start and its end.
func answeredByALiveIncarnation(c call, lives []*life) bool {
	inc := c.reply.(*testpb.Echo).Text
	for _, l := range lives {
		if strconv.FormatUint(l.inc, 16) != inc {
			continue
		}
		return !l.born.After(c.end) && (l.ended.IsZero() || !l.ended.Before(c.start))
	}
	return false
}

// waitGroupWithin waits for wg up to d; false if it did not finish.
func waitGroupWithin(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
