package services

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/idempotency"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) {
	testnode.SetChildHook(childHook)
	testnode.MaybeRunChild()
	goleak.VerifyTestMain(m)
}

// childHook installs services in a child node. Options.Extra:
//
//	provide     space-separated service records (meta.go's format); the
//	            functions come from testFunctions by name
//	dir         where "append" records ids (<node>.ids) and "hold" and
//	            "wedge" look for their release files
//	work        how long "append" works (a duration)
//	unregister  comma-separated "<service>@<major>:<fn>": announced but
//	            not registered, so calls fail with ErrNoFunction
//	ackwait     Config.DrainAckWait
//	pools       non-empty: start a proxy pool (the pooled path)
//	guarddir    the keyed functions' guard keeps its records there (a
//	            Dir store, RerunInterrupted); else in memory
func childHook(sys *actor.System, n *remote.Node, o testnode.Options) error {
	if o.Extra["pools"] != "" {
		if _, err := proxypool.Start(n, proxypool.Config{}); err != nil {
			return err
		}
	}
	cfg := Config{}
	if d, err := time.ParseDuration(o.Extra["ackwait"]); err == nil {
		cfg.DrainAckWait = d
	}
	svc, err := Start(context.Background(), n, cfg)
	if err != nil {
		return err
	}
	var store idempotency.Store = idempotency.NewMemory(idempotency.MemoryConfig{})
	var gopts []idempotency.Option
	if d := o.Extra["guarddir"]; d != "" {
		if store, err = idempotency.OpenDir(d, idempotency.DirConfig{}); err != nil {
			return err
		}
		gopts = append(gopts, idempotency.RerunInterrupted())
	}
	testGuard = idempotency.NewGuard(store, sys.Incarnation(), gopts...)
	if err := sys.Register("svc_inflight", func(context.Context, proto.Message) (proto.Message, error) {
		var parts []string
		for _, f := range svc.InFlight() {
			parts = append(parts, fmt.Sprintf("%s@%s:%s=%d", f.Service, f.Version, f.Function, f.Count))
		}
		return &testpb.Echo{Text: strings.Join(parts, " "), From: sys.Name()}, nil
	}); err != nil {
		return err
	}
	// svc_call(Echo{Text: "<service> <major> <fn> <arg>"}) calls a service
	// from this node: Echo{Text: result text, From: provider} or a
	// rejection with the error.
	if err := sys.Register("svc_call", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		f := strings.Fields(arg.(*testpb.Echo).Text)
		if len(f) != 4 {
			return nil, actor.Reject("bad_arg", "want <service> <major> <fn> <arg>")
		}
		major, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, actor.Reject("bad_arg", err.Error())
		}
		res, err := svc.Call(ctx, f[0], Major(major), f[2], &testpb.Echo{Text: f[3]})
		if err != nil {
			return nil, actor.Reject("call_failed", err.Error())
		}
		return res, nil
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, spec := range strings.Fields(o.Extra["provide"]) {
		s, err := testService(spec, sys.Name(), o.Extra)
		if err != nil {
			return err
		}
		if err := svc.Provide(ctx, s); err != nil {
			return err
		}
	}
	for _, u := range strings.Split(o.Extra["unregister"], ",") {
		if name, fn, ok := strings.Cut(u, ":"); ok {
			service, major, _ := strings.Cut(name, "@")
			m, err := strconv.Atoi(major)
			if err != nil {
				return fmt.Errorf("unregister %q: %w", u, err)
			}
			sys.Unregister(regName(service, m, fn))
		}
	}
	return nil
}

// testService builds a Service from a record, with handlers from
// testFunctions.
func testService(spec, node string, extra map[string]string) (Service, error) {
	r, err := decodeRecord(spec)
	if err != nil {
		return Service{}, err
	}
	s := Service{Name: r.Name, Version: r.Version, Defaults: r.Defaults}
	for _, f := range r.Fns {
		h := testFunction(f.Name, node, extra)
		if h == nil {
			return Service{}, fmt.Errorf("no test function %q", f.Name)
		}
		fn := Function{Name: f.Name, Handler: h, Idempotent: f.Idempotent, Deadline: f.Deadline}
		if f.Keyed {
			fn.Guard = testGuard
		}
		s.Functions = append(s.Functions, fn)
	}
	return s, nil
}

// testGuard is the child's guard of its keyed functions (":k").
var testGuard *idempotency.Guard

// idsMu serialises appends to the id files of one process.
var idsMu sync.Mutex

// testFunction is the handler called name, for node.
//
//	append  records Echo.Text in <dir>/<node>.ids, works <work>, answers
//	        Echo{Text, From: node}
//	slow    works <work> ignoring ctx, then as append
//	echo    Echo{Text, From: node}
//	hold    waits (honouring ctx) until <dir>/<Echo.Text> exists
//	wedge   waits until <dir>/<Echo.Text> exists, ignoring ctx
//	reject  rejects with code "nope"
//	panic   panics
//
// A suffix after '_' names a variant with the same behaviour (hold_put,
// hold_get), so one service can declare it idempotent and not.
func testFunction(name, node string, extra map[string]string) actor.Handler {
	dir := extra["dir"]
	name, _, _ = strings.Cut(name, "_")
	switch name {
	case "append":
		work, _ := time.ParseDuration(extra["work"])
		return func(ctx context.Context, arg proto.Message) (proto.Message, error) {
			id := arg.(*testpb.Echo).Text
			idsMu.Lock()
			f, err := os.OpenFile(filepath.Join(dir, node+".ids"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				_, err = f.WriteString(id + "\n")
				f.Close()
			}
			idsMu.Unlock()
			if err != nil {
				return nil, err
			}
			if work > 0 {
				t := time.NewTimer(work)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
				}
			}
			return &testpb.Echo{Text: id, From: node}, nil
		}
	case "slow":
		work, _ := time.ParseDuration(extra["work"])
		return func(_ context.Context, arg proto.Message) (proto.Message, error) {
			id := arg.(*testpb.Echo).Text
			t := time.NewTimer(work) // ignoring ctx: it outlives its deadline
			defer t.Stop()
			<-t.C
			idsMu.Lock()
			defer idsMu.Unlock()
			f, err := os.OpenFile(filepath.Join(dir, node+".ids"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			if _, err := f.WriteString(id + "\n"); err != nil {
				return nil, err
			}
			return &testpb.Echo{Text: id, From: node}, nil
		}
	case "echo":
		return func(_ context.Context, arg proto.Message) (proto.Message, error) {
			return &testpb.Echo{Text: arg.(*testpb.Echo).Text, From: node}, nil
		}
	case "hold", "wedge":
		honour := name == "hold"
		return func(ctx context.Context, arg proto.Message) (proto.Message, error) {
			path := filepath.Join(dir, arg.(*testpb.Echo).Text)
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for {
				if _, err := os.Stat(path); err == nil {
					return &testpb.Echo{Text: "released", From: node}, nil
				}
				done := ctx.Done()
				if !honour {
					done = nil
				}
				select {
				case <-tick.C:
				case <-done:
					return nil, ctx.Err()
				}
			}
		}
	case "reject":
		return func(context.Context, proto.Message) (proto.Message, error) {
			return nil, actor.Reject("nope", "rejected by "+node)
		}
	case "panic":
		return func(context.Context, proto.Message) (proto.Message, error) {
			panic("test panic on " + node)
		}
	}
	return nil
}

// client is an in-process node with services, the caller of the tests.
type client struct {
	sys   *actor.System
	node  *remote.Node
	svc   *Services
	pools *proxypool.Manager // nil without a proxy pool
}

func newClient(t *testing.T, name string, cfg Config) *client {
	t.Helper()
	return newClientPools(t, name, cfg, false)
}

// newClientPools is newClient, with a proxy pool when pools is set.
func newClientPools(t *testing.T, name string, cfg Config, pools bool) *client {
	t.Helper()
	sys, n := testnode.Local(t, testnode.Options{Name: name})
	var pm *proxypool.Manager
	if pools {
		var err error
		pm, err = proxypool.Start(n, proxypool.Config{})
		require.NoError(t, err)
	}
	svc, err := Start(ctxT(t, 10*time.Second), n, cfg)
	require.NoError(t, err)
	return &client{sys: sys, node: n, svc: svc, pools: pm}
}

// provider starts a child node providing specs and links the client to
// it; it returns once the client sees every service of it.
func (c *client) provider(t *testing.T, name string, extra map[string]string, specs ...string) *testnode.Child {
	t.Helper()
	ex := map[string]string{"provide": strings.Join(specs, " ")}
	for k, v := range extra {
		ex[k] = v
	}
	ch := testnode.Start(t, testnode.Options{Name: name, Extra: ex})
	require.NoError(t, c.node.Connect(ctxT(t, 10*time.Second), name, ch.Addr))
	for _, spec := range specs {
		r, err := decodeRecord(spec)
		require.NoError(t, err)
		c.waitProvider(t, r.Name, name, ch.Incarnation)
	}
	return ch
}

// waitProvider waits until the client lists node (incarnation inc) as a
// provider of service.
func (c *client) waitProvider(t *testing.T, service, node string, inc uint64) {
	t.Helper()
	eventually(t, node+" providing "+service, func() bool {
		for _, p := range c.svc.Providers(service) {
			if p.Node == node && p.Incarnation == inc {
				return true
			}
		}
		return false
	})
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds, failing the test after 20 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// fakeClock is an injected clock: it only moves when the call loop sleeps
// (by exactly the pause) or when a test advances it.
type fakeClock struct {
	mu     sync.Mutex // protects following
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.sleeps = append(c.sleeps, d)
	return nil
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// starts are the attempts' start times relative to the first.
func starts(e *CallError) []time.Duration {
	out := make([]time.Duration, len(e.Attempts))
	for i, a := range e.Attempts {
		out[i] = a.Start.Sub(e.Attempts[0].Start)
	}
	return out
}
