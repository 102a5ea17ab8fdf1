//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

var (
	soakFor   = flag.Duration("chaos.soak", 0, "run the soak scenario for this long (make test-chaos: 10m); 0 leaves it out")
	resultsTo = flag.String("chaos.results", "", "append every scenario's summary as a JSON line to this file")
	plotsTo   = flag.String("chaos.plots", "", "write the soak's SVG plots to this directory")
)

func TestMain(m *testing.M) {
	testnode.SetChildPreHook(ChildPreHook)
	testnode.SetChildHook(ChildHook)
	testnode.MaybeRunChild()
	goleak.VerifyTestMain(m)
}

// scenario collects one scenario's figures and prints its summary line,
// "scenario=<name> ok=<bool> key=value ...", when the test ends (after
// every other cleanup, so ok covers them too).
type scenario struct {
	t    *testing.T
	name string
	mu   sync.Mutex // protects following
	keys []string
	vals map[string]string
}

func newScenario(t *testing.T, name string) *scenario {
	sc := &scenario{t: t, name: name, vals: map[string]string{}}
	start := time.Now()
	t.Cleanup(func() {
		sc.set("secs", time.Since(start).Seconds())
		ok := !t.Failed()
		line := sc.line(ok)
		fmt.Println(line)
		if *resultsTo != "" {
			b, _ := json.Marshal(map[string]any{"scenario": name, "ok": ok, "date": time.Now().Format(time.RFC3339), "line": line})
			f, err := os.OpenFile(*resultsTo, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err == nil {
				_, _ = f.Write(append(b, '\n'))
				f.Close()
			}
		}
	})
	return sc
}

// set records a figure; later sets of the same key replace it in place.
func (sc *scenario) set(key string, v any) {
	var s string
	switch x := v.(type) {
	case float64:
		s = strconv.FormatFloat(x, 'f', 1, 64)
	case time.Duration:
		s = strconv.FormatInt(x.Milliseconds(), 10)
	case string:
		s = strings.ReplaceAll(x, " ", "_")
	default:
		s = fmt.Sprint(x)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if _, ok := sc.vals[key]; !ok {
		sc.keys = append(sc.keys, key)
	}
	sc.vals[key] = s
}

func (sc *scenario) line(ok bool) string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "scenario=%s ok=%t", sc.name, ok)
	for _, k := range sc.keys {
		fmt.Fprintf(&b, " %s=%s", k, sc.vals[k])
	}
	return b.String()
}

// tlog forwards log lines to the test log until the test is over.
type tlog struct {
	t    testing.TB
	over *atomic.Bool
}

func (w tlog) Write(p []byte) (int, error) {
	if !w.over.Load() {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func newTap(t testing.TB) *LogTap {
	over := new(atomic.Bool)
	t.Cleanup(func() { over.Store(true) })
	return NewLogTap(tlog{t: t, over: over}, slog.LevelWarn, 3)
}

// node is a node in the test process.
type node struct {
	name string
	sys  *actor.System
	n    *remote.Node
	eq   *Equipped
	logs *LogTap
}

// startLocal starts a node in the test process with the testnode catalog
// and the suite's machinery; it is stopped when the test ends.
func startLocal(t testing.TB, name string, cfg remote.Config, extra map[string]string) *node {
	t.Helper()
	logs := newTap(t)
	sys, err := actor.Start(actor.Config{Name: name, Logger: logs.Logger()})
	require.NoError(t, err)
	require.NoError(t, testnode.Install(sys))
	if cfg.Cookie == "" {
		cfg.Cookie = testnode.DefaultCookie
	}
	n, err := remote.Start(context.Background(), sys, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := sys.Stop(ctx); err != nil {
			t.Errorf("stop %s: %v", name, err)
		}
	})
	eq, err := Equip(sys, n, extra)
	require.NoError(t, err)
	return &node{name: name, sys: sys, n: n, eq: eq, logs: logs}
}

var childSeq atomic.Int64

// startChild starts a child node with a counter file of its own and
// returns the parent's view of its counters.
func startChild(t testing.TB, o testnode.Options) (*testnode.Child, *Counters) {
	t.Helper()
	extra := map[string]string{}
	for k, v := range o.Extra {
		extra[k] = v
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%d.counters", o.Name, childSeq.Add(1)))
	ctr, err := OpenCounters(path)
	require.NoError(t, err)
	t.Cleanup(func() { ctr.Close() }) // after the child's own cleanup
	extra[ExtraCounters] = path
	o.Extra = extra
	return testnode.Start(t, o), ctr
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}

// settle waits until f returns the same value twice, quiet apart, and
// returns it: counters that stop moving once the traffic is over.
func settle(t testing.TB, timeout, quiet time.Duration, f func() int64) int64 {
	t.Helper()
	last, since := f(), time.Now()
	eventually(t, timeout, "counters to settle", func() bool {
		if v := f(); v != last {
			last, since = v, time.Now()
		}
		return time.Since(since) >= quiet
	})
	return last
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func selfRSS() int64 {
	rss, _ := RSS(os.Getpid())
	return rss
}

// deadTally counts a node's dead letters from now on, by message type:
// those of user messages (what the test sent, however the runtime
// wrapped it: the message itself when a send was refused, a
// *proxypool.Outgoing dropped by a proxy, nil for a frame a closing link
// never wrote) and those of the runtime's own bookkeeping messages. The
// hot path is lock-free: a refused flood makes millions.
type deadTally struct {
	none, outgoing, echo atomic.Int64
	mu                   sync.Mutex // protects others
	others               map[string]int64
}

func tallyDeadLetters(sys *actor.System) *deadTally {
	d := &deadTally{others: map[string]int64{}}
	sys.SubscribeDeadLetters(func(dl actor.DeadLetter) {
		switch dl.Message.(type) {
		case nil:
			d.none.Add(1)
		case *proxypool.Outgoing:
			d.outgoing.Add(1)
		case *testpb.Echo:
			d.echo.Add(1)
		default:
			d.mu.Lock()
			d.others[fmt.Sprintf("%T", dl.Message)]++
			d.mu.Unlock()
		}
	})
	return d
}

// of is the count for one message type ("<nil>", "*proxypool.Outgoing",
// "*testpb.Echo", or another).
func (d *deadTally) of(typ string) int64 {
	switch typ {
	case "<nil>":
		return d.none.Load()
	case "*proxypool.Outgoing":
		return d.outgoing.Load()
	case "*testpb.Echo":
		return d.echo.Load()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.others[typ]
}

// user is the count of user messages (other test messages included).
func (d *deadTally) user() int64 {
	n := d.none.Load() + d.outgoing.Load() + d.echo.Load()
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, v := range d.others {
		if strings.HasPrefix(k, "*testpb.") {
			n += v
		}
	}
	return n
}

// internals is the count of the runtime's own messages, with their types.
func (d *deadTally) internals() (int64, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	var types []string
	for k, v := range d.others {
		if !strings.HasPrefix(k, "*testpb.") {
			n += v
			types = append(types, fmt.Sprintf("%s:%d", k, v))
		}
	}
	return n, strings.Join(types, ";")
}
