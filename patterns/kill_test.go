package patterns

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// groupCalls are the four coordinated patterns behind one signature.
var groupCalls = []struct {
	name string
	call func(ctx context.Context, pt *Patterns, nodes []string, fn string, arg proto.Message, opts ...Option) error
}{
	{"call_one", func(ctx context.Context, pt *Patterns, nodes []string, fn string, arg proto.Message, opts ...Option) error {
		_, err := pt.CallOne(ctx, nodes, fn, arg, opts...)
		return err
	}},
	{"call_any", func(ctx context.Context, pt *Patterns, nodes []string, fn string, arg proto.Message, opts ...Option) error {
		_, err := pt.CallAny(ctx, nodes, fn, arg, opts...)
		return err
	}},
	{"call_all", func(ctx context.Context, pt *Patterns, nodes []string, fn string, arg proto.Message, opts ...Option) error {
		_, err := pt.CallAll(ctx, nodes, fn, arg, opts...)
		return err
	}},
	{"call_all_wait", func(ctx context.Context, pt *Patterns, nodes []string, fn string, arg proto.Message, opts ...Option) error {
		_, _, err := pt.CallAllWait(ctx, nodes, fn, arg, opts...)
		return err
	}},
}

// recv takes one value from ch, failing the test after 15 s.
func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(15 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// coordinatorError unpacks a *CoordinatorError and checks it names the
// call.
func coordinatorError(t *testing.T, err error, pattern string, nodes []string) *CoordinatorError {
	t.Helper()
	var ce *CoordinatorError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, pattern, ce.Pattern)
	require.Equal(t, "script", ce.Function)
	require.Equal(t, nodes, ce.Nodes)
	for _, part := range []string{pattern + "(", `"script"`, strings.Join(nodes, " "), "mailroom.testpb.Echo"} {
		require.Contains(t, err.Error(), part)
	}
	return ce
}

func TestCoordinatorKilled(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt
	nodes := []string{"b"}
	for _, gc := range groupCalls {
		t.Run(gc.name, func(t *testing.T) {
			_, cancelled := nodeStats(t, sys, "b")
			coord := make(chan actor.PID, 1)
			h := &hooks{coordinator: func(pid actor.PID) { coord <- pid }}
			errc := make(chan error, 1)
			ctx, s := ctxT(t, 30*time.Second), script(t, "*=sleep20000:ok")
			go func() { errc <- gc.call(ctx, pt, nodes, "script", s, withHooks(h)) }()
			pid := recv(t, "the coordinator", coord)
			eventually(t, "the call sleeping on b", func() bool { s, _ := nodeStats(t, sys, "b"); return s == 1 })
			sys.StopActor(pid)

			err := recv(t, "the group call", errc)
			ce := coordinatorError(t, err, gc.name, nodes)
			require.ErrorIs(t, ce, ErrCoordinatorStopped)
			// Its caller was stopped too, and b's call cancelled.
			waitIdle(t, sys, pt, "b")
			_, after := nodeStats(t, sys, "b")
			require.Equal(t, cancelled+1, after)
		})
	}
}

func TestCoordinatorCrashed(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt
	nodes := []string{"b", "c"}
	for _, gc := range groupCalls {
		t.Run(gc.name, func(t *testing.T) {
			h := &hooks{report: func(string) { panic("coordinator bug") }}
			err := gc.call(ctxT(t, 30*time.Second), pt, nodes, "script", script(t, "*=ok"), withHooks(h))
			ce := coordinatorError(t, err, gc.name, nodes)
			var pe *actor.PanicError
			require.ErrorAs(t, ce, &pe)
			require.Equal(t, "coordinator bug", pe.Value)
			require.Contains(t, err.Error(), "coordinator bug")
			waitIdle(t, sys, pt, "b", "c")
		})
	}
}

func TestCallerKilled(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt
	nodes := []string{"b", "c"}
	lost := func(t *testing.T, err error) {
		t.Helper()
		require.ErrorIs(t, err, ErrCallerLost)
		require.True(t, IsUnreachable(err))
	}
	cases := []struct {
		pattern string
		rpcErr  bool
		cScript string
		check   func(t *testing.T, res []Result, errs []NodeError, err error)
	}{
		{"call_one", false, "c=reject", func(t *testing.T, _ []Result, errs []NodeError, _ error) {
			require.Equal(t, []string{"c"}, errNodes(errs), "b skipped")
		}},
		{"call_one", true, "c=reject", func(t *testing.T, _ []Result, errs []NodeError, _ error) {
			require.ElementsMatch(t, []string{"b", "c"}, errNodes(errs))
			for _, e := range errs {
				if e.Node == "b" {
					lost(t, e.Err)
				}
			}
		}},
		{"call_any", false, "c=reject", func(t *testing.T, _ []Result, errs []NodeError, _ error) {
			require.Equal(t, []string{"c"}, errNodes(errs), "b skipped")
		}},
		{"call_any", true, "c=reject", func(t *testing.T, _ []Result, errs []NodeError, _ error) {
			require.ElementsMatch(t, []string{"b", "c"}, errNodes(errs))
			for _, e := range errs {
				if e.Node == "b" {
					lost(t, e.Err)
				}
			}
		}},
		{"call_all", false, "c=ok", func(t *testing.T, res []Result, _ []NodeError, err error) {
			require.NoError(t, err)
			require.Equal(t, []string{"c"}, nodesOf(res), "b skipped")
		}},
		{"call_all", true, "c=ok", func(t *testing.T, _ []Result, _ []NodeError, err error) {
			var ne NodeError
			require.ErrorAs(t, err, &ne)
			require.Equal(t, "b", ne.Node)
			lost(t, err)
		}},
		{"call_all_wait", false, "c=ok", func(t *testing.T, res []Result, errs []NodeError, err error) {
			require.NoError(t, err)
			require.Equal(t, []string{"c"}, nodesOf(res))
			require.Equal(t, []string{"b"}, errNodes(errs))
			lost(t, errs[0].Err)
		}},
		{"call_all_wait", true, "c=ok", func(t *testing.T, res []Result, errs []NodeError, err error) {
			require.NoError(t, err)
			require.Equal(t, []string{"c"}, nodesOf(res))
			require.Equal(t, []string{"b"}, errNodes(errs))
			lost(t, errs[0].Err)
		}},
	}
	for _, tc := range cases {
		name := tc.pattern + "/skipped"
		if tc.rpcErr {
			name = tc.pattern + "/counted"
		}
		t.Run(name, func(t *testing.T) {
			callers := make(chan actor.PID, 4)
			h := &hooks{caller: func(node string, pid actor.PID) {
				if node == "b" {
					callers <- pid
				}
			}}
			opts := []Option{withHooks(h)}
			if tc.rpcErr {
				opts = append(opts, UnreachableIsError())
			}
			s := script(t, "b=sleep20000:ok,"+tc.cScript)
			type out struct {
				res  []Result
				errs []NodeError
				err  error
			}
			done := make(chan out, 1)
			ctx := ctxT(t, 30*time.Second)
			go func() {
				var o out
				switch tc.pattern {
				case "call_one":
					_, o.err = pt.CallOne(ctx, nodes, "script", s, opts...)
				case "call_any":
					_, o.err = pt.CallAny(ctx, nodes, "script", s, opts...)
				case "call_all":
					o.res, o.err = pt.CallAll(ctx, nodes, "script", s, opts...)
				case "call_all_wait":
					o.res, o.errs, o.err = pt.CallAllWait(ctx, nodes, "script", s, opts...)
				}
				var af *AllFailedError
				if errors.As(o.err, &af) {
					o.errs = af.Errors
				}
				done <- o
			}()
			pid := recv(t, "b's caller", callers)
			eventually(t, "the call sleeping on b", func() bool { s, _ := nodeStats(t, sys, "b"); return s == 1 })
			sys.StopActor(pid)
			o := recv(t, "the group call", done)
			var ce *CoordinatorError
			require.False(t, errors.As(o.err, &ce), "the coordinator carried on: %v", o.err)
			tc.check(t, o.res, o.errs, o.err)
			waitIdle(t, sys, pt, "b", "c")
		})
	}
}
