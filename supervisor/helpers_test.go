package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testutil"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newSystem starts a node stopped at the end of the test.
func newSystem(t testing.TB) *actor.System {
	t.Helper()
	sys, err := actor.Start(actor.Config{Name: "sup-test", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	stopOnCleanup(t, sys)
	return sys
}

// newLoggedSystem is newSystem with its logs captured.
func newLoggedSystem(t testing.TB) (*actor.System, *logBuffer) {
	t.Helper()
	lb := &logBuffer{}
	sys, err := actor.Start(actor.Config{Name: "sup-test", Logger: slog.New(slog.NewTextHandler(lb, nil))})
	require.NoError(t, err)
	stopOnCleanup(t, sys)
	return sys, lb
}

func stopOnCleanup(t testing.TB, sys *actor.System) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, sys.Stop(ctx))
	})
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// recorder collects lifecycle events from many actors, in order.
type recorder struct {
	mu     sync.Mutex // protects events
	events []string
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// since returns the events from index i on.
func (r *recorder) since(i int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events[i:]...)
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

var errWorkerFailed = errors.New("worker failed")

// worker is a test child: it records "id:event" for its lifecycle and
// obeys "crash" (panic), "exit" (normal stop) and "fail" (Exit with
// errWorkerFailed).
type worker struct {
	id        string
	rec       *recorder
	restarts  chan actor.Restarting // optional: receives each Restarting
	failStart func() bool           // optional: Started panics when it returns true
	stopGate  <-chan struct{}       // optional: Stopping blocks until closed
}

func (w *worker) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Restarting:
		w.rec.add(w.id + ":restarting")
		if w.restarts != nil {
			w.restarts <- m
		}
	case actor.Started:
		if w.failStart != nil && w.failStart() {
			panic(fmt.Sprintf("%s cannot start", w.id))
		}
		w.rec.add(w.id + ":started")
	case actor.Stopping:
		if w.stopGate != nil {
			<-w.stopGate
		}
		w.rec.add(w.id + ":stopping")
	case actor.Stopped:
		w.rec.add(w.id + ":stopped")
	case string:
		switch m {
		case "crash":
			panic(w.id + " crashed")
		case "exit":
			c.Stop(c.Self())
		case "fail":
			c.Exit(errWorkerFailed)
		}
	}
}

// props returns Props making a fresh copy of w per instance.
func (w worker) props() *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { x := w; return &x })
}

func workerSpec(rec *recorder, id string) ChildSpec {
	return ChildSpec{ID: id, Props: worker{id: id, rec: rec}.props()}
}

// pids returns the PID of every child of sup by ID.
func pids(t testing.TB, sys *actor.System, sup actor.PID) map[string]actor.PID {
	t.Helper()
	kids, err := WhichChildren(ctxT(t), sys, sup)
	require.NoError(t, err)
	out := make(map[string]actor.PID, len(kids))
	for _, k := range kids {
		out[k.ID] = k.PID
	}
	return out
}

// ids returns the IDs of sup's children in order.
func ids(t testing.TB, sys *actor.System, sup actor.PID) []string {
	t.Helper()
	kids, err := WhichChildren(ctxT(t), sys, sup)
	require.NoError(t, err)
	var out []string
	for _, k := range kids {
		out = append(out, k.ID)
	}
	return out
}

// waitRestarted waits until child id of sup runs with a PID other than old.
func waitRestarted(t testing.TB, sys *actor.System, sup actor.PID, id string, old actor.PID) actor.PID {
	t.Helper()
	var now actor.PID
	eventually(t, "restart of "+id, func() bool {
		now = pids(t, sys, sup)[id]
		return !now.IsZero() && now != old
	})
	return now
}

// watch returns a channel that receives the Terminated of pid.
func watch(t testing.TB, sys *actor.System, pid actor.PID) <-chan actor.Terminated {
	t.Helper()
	ch := make(chan actor.Terminated, 1)
	_, err := sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			c.Watch(pid)
		case actor.Terminated:
			ch <- m
		}
	})
	require.NoError(t, err)
	return ch
}

func recvTerminated(t testing.TB, ch <-chan actor.Terminated) actor.Terminated {
	t.Helper()
	return recv(t, ch)
}

// recv receives from ch or fails the test after 10s.
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		var zero T
		t.Fatalf("no %T within 10s", zero)
		return zero
	}
}

// only keeps the events with one of the suffixes.
func only(events []string, suffixes ...string) []string {
	var out []string
	for _, e := range events {
		for _, s := range suffixes {
			if strings.HasSuffix(e, s) {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// fakeClock is an intensity clock tests advance by hand.
type fakeClock struct {
	mu sync.Mutex // protects t
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type logBuffer = testutil.LogBuffer

// eventually polls cond until it holds (internal/testing/testutil).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, cond)
}
