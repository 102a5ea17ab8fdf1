package patterns

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// The policies step by step, without actors.

var (
	rejected    = &actor.RemoteError{Op: "call", Node: "x", Target: "f", Code: "rejected", Message: "no", Err: errors.New("no")}
	unreachable = actor.NewError("call", "x", 0, "f", actor.ErrUnreachable)
)

func value(node string) proto.Message { return &testpb.Echo{From: node} }

// noShuffle keeps the order: the tests below see the list order.
func noShuffle(int, func(i, j int)) {}

func TestLocalFirst(t *testing.T) {
	require.Equal(t, []int{1, 3, 0, 2}, localFirst([]string{"b", "a", "c", "a"}, "a", noShuffle))
	require.Equal(t, []int{0, 1}, localFirst([]string{"b", "c"}, "a", noShuffle))
	reverse := func(n int, swap func(i, j int)) {
		for i := 0; i < n/2; i++ {
			swap(i, n-1-i)
		}
	}
	require.Equal(t, []int{1, 3, 2, 0}, localFirst([]string{"b", "a", "c", "d"}, "a", reverse), "only the others are shuffled")
}

func TestCallOnePolicy(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	p := &callOne{nodes: nodes, fn: "f", order: []int{0, 1, 2}}
	require.Equal(t, step{call: []int{0}}, p.begin())
	require.Equal(t, step{call: []int{1}}, p.result(0, nil, rejected))
	require.Equal(t, step{call: []int{2}}, p.result(1, nil, unreachable), "skipped, and the next tried")
	s := p.result(2, value("c"), nil)
	require.True(t, s.done)
	require.Equal(t, "c", s.ans.one.Node)
	require.Equal(t, step{}, p.result(2, value("c"), nil), "after the answer: ignored")

	p = &callOne{nodes: nodes, fn: "f", order: []int{2, 0, 1}, opt: options{unreachableIsError: true}}
	p.begin()
	p.result(2, nil, unreachable)
	p.result(0, nil, rejected)
	s = p.result(1, nil, rejected)
	require.True(t, s.done)
	require.Equal(t, []string{"c", "a", "b"}, errNodes(allFailed(t, s.ans.err)), "in the order tried")
}

func TestCallAnyPolicy(t *testing.T) {
	nodes := []string{"b", "a", "c", "a"}
	t.Run("local success casts to every other entry", func(t *testing.T) {
		p := &callAny{nodes: nodes, fn: "f", local: 1}
		require.Equal(t, step{call: []int{1}}, p.begin())
		s := p.result(1, value("a"), nil)
		require.True(t, s.done)
		require.Equal(t, "a", s.ans.one.Node)
		require.Equal(t, []int{0, 2, 3}, s.cast)
	})
	t.Run("local failure calls the rest in parallel", func(t *testing.T) {
		p := &callAny{nodes: nodes, fn: "f", local: 1}
		p.begin()
		require.Equal(t, step{call: []int{0, 2, 3}}, p.result(1, nil, rejected))
		require.Equal(t, step{}, p.result(2, nil, unreachable))
		s := p.result(3, value("a"), nil)
		require.True(t, s.done)
		require.Equal(t, "a", s.ans.one.Node)
		require.Empty(t, s.cast, "no cast after a parallel success")
		require.Equal(t, step{}, p.result(0, value("b"), nil), "later successes are discarded")
	})
	t.Run("all failed", func(t *testing.T) {
		p := &callAny{nodes: nodes, fn: "f", local: 1}
		p.begin()
		p.result(1, nil, rejected)
		p.result(3, nil, rejected)
		p.result(0, nil, unreachable)
		s := p.result(2, nil, rejected)
		require.True(t, s.done)
		require.Equal(t, []string{"a", "a", "c"}, errNodes(allFailed(t, s.ans.err)), "arrival order, unreachable skipped")
	})
	t.Run("only the local node, failed", func(t *testing.T) {
		p := &callAny{nodes: []string{"a"}, fn: "f", local: 0}
		p.begin()
		s := p.result(0, nil, rejected)
		require.True(t, s.done)
		require.Equal(t, []string{"a"}, errNodes(allFailed(t, s.ans.err)))
	})
}

func TestCallAllPolicy(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	p := &callAll{nodes: nodes}
	require.Equal(t, step{call: []int{0, 1, 2}}, p.begin())
	p.result(2, value("c"), nil)
	p.result(1, nil, unreachable)
	s := p.result(0, value("a"), nil)
	require.True(t, s.done)
	require.Equal(t, []string{"c", "a"}, nodesOf(s.ans.all), "arrival order")

	p = &callAll{nodes: nodes}
	p.begin()
	p.result(0, value("a"), nil)
	s = p.result(2, nil, rejected)
	require.True(t, s.done)
	require.Equal(t, NodeError{Node: "c", Err: rejected}, s.ans.err, "the first rejection decides")
	require.Equal(t, step{}, p.result(1, value("b"), nil))

	p = &callAll{nodes: nodes}
	p.begin()
	p.result(0, nil, unreachable)
	p.result(1, nil, unreachable)
	s = p.result(2, nil, unreachable)
	require.ErrorIs(t, s.ans.err, ErrNoneAvailable)

	p = &callAll{nodes: nodes, opt: options{unreachableIsError: true}}
	p.begin()
	s = p.result(1, nil, unreachable)
	require.True(t, s.done)
	require.Equal(t, NodeError{Node: "b", Err: unreachable}, s.ans.err)
}

func TestCallAllWaitPolicy(t *testing.T) {
	p := &callAllWait{nodes: []string{"a", "b", "c", "d"}}
	require.Equal(t, step{call: []int{0, 1, 2, 3}}, p.begin())
	require.False(t, p.result(3, nil, unreachable).done)
	require.False(t, p.result(1, value("b"), nil).done)
	require.False(t, p.result(0, nil, rejected).done)
	s := p.result(2, value("c"), nil)
	require.True(t, s.done)
	require.Equal(t, []string{"b", "c"}, nodesOf(s.ans.all))
	require.Equal(t, []string{"d", "a"}, errNodes(s.ans.rejects))
}

func TestIsUnreachable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{unreachable, true},
		{actor.NewError("call", "x", 1, "f", actor.ErrNodeDown), true},
		{actor.NewError("call", "x", 1, "f", actor.ErrNotSent), true},
		{callerLost(actor.PID{Node: "a", Incarnation: 1, ID: 7}, nil), true},
		// A crashed caller's reason is a *PanicError: still lost.
		{callerLost(actor.PID{Node: "a", Incarnation: 1, ID: 7}, &actor.PanicError{Value: "boom"}), true},
		{rejected, false},
		{&actor.PanicError{Op: "call", Value: "boom"}, false},
		// A rejection whose code names a sentinel is still an answer.
		{&actor.RemoteError{Op: "call", Code: "unreachable", Message: "downstream"}, false},
		{actor.NewError("call", "x", 1, "f", actor.ErrNoFunction), false},
		{fmt.Errorf("wrapped: %w", unreachable), true},
	} {
		require.Equal(t, tc.want, IsUnreachable(tc.err), "%v", tc.err)
	}
	require.False(t, errors.Is(&actor.RemoteError{Code: "unreachable"}, actor.ErrUnreachable),
		"a coded rejection no longer matches the sentinel its code names (IsUnreachable guarded against it)")
}

func TestErrorTexts(t *testing.T) {
	ne := NodeError{Node: "b", Err: rejected}
	require.Equal(t, "patterns: node b: "+rejected.Error(), ne.Error())
	af := &AllFailedError{Pattern: "call_any", Function: "f"}
	require.Equal(t, `patterns: call_any "f": every node failed (none could be reached; unreachable nodes are skipped)`, af.Error())
	af.Errors = []NodeError{ne}
	require.Contains(t, af.Error(), `every node failed: b: `)
	ce := &CoordinatorError{Pattern: "call_all", Function: "f", Nodes: []string{"a", "b"}, Arg: &testpb.Echo{}, Reason: ErrCoordinatorStopped}
	require.Equal(t, `patterns: call_all(nodes [a b], function "f", arg mailroom.testpb.Echo): coordinator stopped before it answered`, ce.Error())
	require.ErrorIs(t, ce, ErrCoordinatorStopped)
}
