package patterns

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testutil"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/supervisor"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testnode.MaybeRunChild()
	goleak.VerifyTestMain(m)
}

// missing is a node no discovery knows.
const missing = "zz"

// cluster is the local node "a" with patterns, linked to "b" and "c",
// each in a process of its own, all with the testnode catalog.
type cluster struct {
	sys  *actor.System
	pt   *Patterns
	b, c *testnode.Child
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	b := testnode.Start(t, testnode.Options{Name: "b"})
	c := testnode.Start(t, testnode.Options{Name: "c"})
	sys, n := testnode.Local(t, testnode.Options{Name: "a", Seeds: []string{b.Seed(), c.Seed()}})
	require.NoError(t, n.Connect(ctxT(t, 10*time.Second), "b", ""))
	require.NoError(t, n.Connect(ctxT(t, 10*time.Second), "c", ""))
	pt, err := Start(sys)
	require.NoError(t, err)
	return &cluster{sys: sys, pt: pt, b: b, c: c}
}

// localNode is a node "a" alone, with patterns and the catalog.
func localNode(t testing.TB) (*actor.System, *Patterns) {
	t.Helper()
	sys, _ := testnode.Local(t, testnode.Options{Name: "a"})
	pt, err := Start(sys)
	require.NoError(t, err)
	return sys, pt
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// scripts numbers the scripts of this test binary.
var scripts atomic.Int64

// script returns a script for the catalog's script function, unique so
// that its runs are counted apart from every other.
func script(t *testing.T, actions string) *testpb.Echo {
	return &testpb.Echo{Text: fmt.Sprintf("%s,id=%s#%d", actions, t.Name(), scripts.Add(1))}
}

// runs is how many times node ran script.
func runs(t *testing.T, sys *actor.System, node string, s *testpb.Echo) int64 {
	t.Helper()
	v, err := sys.Call(ctxT(t, 10*time.Second), node, "script_count", &testpb.Echo{Text: s.Text})
	require.NoError(t, err)
	return v.(*testpb.Echo).N
}

// waitRuns waits until each node has run s the given number of times.
func waitRuns(t *testing.T, sys *actor.System, s *testpb.Echo, want map[string]int64) {
	t.Helper()
	for node, n := range want {
		eventually(t, fmt.Sprintf("%d runs on %s", n, node), func() bool { return runs(t, sys, node, s) == n })
	}
}

// nodeStats is the catalog's stats: sleeping now, and cancelled so far.
func nodeStats(t *testing.T, sys *actor.System, node string) (sleeping, cancelled int) {
	t.Helper()
	v, err := sys.Call(ctxT(t, 10*time.Second), node, "stats", &testpb.Echo{})
	require.NoError(t, err)
	_, err = fmt.Sscanf(v.(*testpb.Echo).Text, "cancelled=%d sleeping=%d", &cancelled, &sleeping)
	require.NoError(t, err)
	return sleeping, cancelled
}

// waitIdle waits until the coordinators are gone and the nodes sleep no
// more: a group call leaves nothing behind.
func waitIdle(t *testing.T, sys *actor.System, pt *Patterns, nodes ...string) {
	t.Helper()
	eventually(t, "no coordinator left", func() bool {
		kids, err := supervisor.WhichChildren(ctxT(t, 5*time.Second), sys, pt.Supervisor())
		return err == nil && len(kids) == 0
	})
	for _, n := range nodes {
		eventually(t, "nothing sleeping on "+n, func() bool { s, _ := nodeStats(t, sys, n); return s == 0 })
	}
}

func nodesOf(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Node
	}
	return out
}

func errNodes(es []NodeError) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Node
	}
	return out
}

func isRejection(err error) bool {
	var re *actor.RemoteError
	return errors.As(err, &re) && re.Code == "rejected"
}

func isCrash(err error) bool {
	var pe *actor.PanicError
	return errors.As(err, &pe) && strings.Contains(fmt.Sprint(pe.Value), "script panic")
}

// allFailed unpacks an *AllFailedError.
func allFailed(t *testing.T, err error) []NodeError {
	t.Helper()
	var af *AllFailedError
	require.ErrorAs(t, err, &af)
	require.ErrorIs(t, err, ErrAllFailed)
	return af.Errors
}

// eventually polls cond until it holds (internal/testing/testutil).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, cond)
}
