package patterns

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// An actor that makes group calls keeps its mailbox: 100 unrelated
// messages queued behind the one it is handling stay in order, and
// nothing else arrives (no reply, report or Terminated of a coordinator
// or caller), whatever the calls go through: successes, rejections, a
// crash, a missing node, a killed caller, a killed coordinator, a
// cancelled ctx, and callers left running after the answer.
func TestOwnerMailboxUntouched(t *testing.T) {
	cl := newCluster(t)
	sys, pt := cl.sys, cl.pt
	nodes := []string{"a", "b", "c", missing}

	// b's caller is killed once its call sleeps on b (see killWhenSleeping).
	callerOfB := make(chan actor.PID, 1)
	killCallerOfB := &hooks{caller: func(node string, pid actor.PID) {
		if node == "b" {
			callerOfB <- pid
		}
	}}
	killed := make(chan bool, 1)
	go func() { killed <- killWhenSleeping(sys, "b", callerOfB) }()
	// Killed at once; the callers' sleeps are short because a call
	// cancelled before its link flushed it still runs (see the report).
	killCoordinator := &hooks{coordinator: func(pid actor.PID) { sys.StopActor(pid) }}
	makeCalls := func() []error {
		ctx := ctxT(t, 30*time.Second)
		var errs []error
		note := func(err error) { errs = append(errs, err) }
		// First, while nothing else sleeps on b.
		_, _, err := pt.CallAllWait(ctx, nodes, "script", script(t, "b=sleep20000:ok,c=panic"), withHooks(killCallerOfB))
		note(err)
		_, err = pt.CallAny(ctx, nodes, "script", script(t, "a=reject,b=panic,c=ok"))
		note(err)
		_, err = pt.CallAny(ctx, []string{"b", "c"}, "script", script(t, "b=ok,c=sleep300:ok"))
		note(err)
		_, err = pt.CallAll(ctx, nodes, "script", script(t, "b=sleep300:reject"), UnreachableIsError())
		note(err)
		_, err = pt.CallOne(ctx, nodes, "script", script(t, "*=reject"))
		note(err)
		_, err = pt.CallAll(ctx, nodes, "script", script(t, "*=sleep500:ok"), withHooks(killCoordinator))
		note(err)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = pt.CallAll(cctx, nodes, "script", script(t, "*=ok"))
		note(err)
		pt.CastAll(nodes, "script", script(t, "*=ok"))
		_, err = pt.CastOne(nodes, "script", script(t, "*=ok"))
		note(err)
		return errs
	}

	got := make(chan any, 200)
	done := make(chan []error, 1)
	owner, err := sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started, actor.Stopping, actor.Stopped:
		case string:
			if m == "go" {
				done <- makeCalls()
			}
			got <- m
		default:
			got <- m
		}
	})
	require.NoError(t, err)
	sys.Send(owner, "go")
	for i := range 100 {
		sys.Send(owner, i)
	}
	errs := recv(t, "the group calls", done)
	require.True(t, recv(t, "the kill of b's caller", killed))
	require.Len(t, errs, 8)
	require.NoError(t, errs[0])
	require.NoError(t, errs[2])
	require.Error(t, errs[5], "the coordinator was killed")
	require.ErrorIs(t, errs[6], context.Canceled)

	// Let everything the calls started end, then close the sequence.
	waitIdle(t, sys, pt, "a", "b", "c")
	sys.Send(owner, "end")
	want := []any{"go"}
	for i := range 100 {
		want = append(want, i)
	}
	want = append(want, "end")
	var seen []any
	for range want {
		seen = append(seen, recv(t, "the owner's messages", got))
	}
	require.Equal(t, want, seen)
	select {
	case m := <-got:
		t.Fatalf("the owner received a stray %T: %v", m, m)
	default:
	}
	require.Equal(t, 0, sys.MailboxLen(owner))
}

// killWhenSleeping stops the actor it receives from pid once node runs a
// sleep, so that the kill cancels a call in flight; false if node never
// sleeps within 15 s. For goroutines other than the test's.
func killWhenSleeping(sys *actor.System, node string, pid <-chan actor.PID) bool {
	deadline := time.After(15 * time.Second)
	var p actor.PID
	select {
	case p = <-pid:
	case <-deadline:
		return false
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v, err := sys.Call(ctx, node, "stats", &testpb.Echo{})
		cancel()
		if err == nil && strings.HasSuffix(v.(*testpb.Echo).Text, "sleeping=1") {
			sys.StopActor(p)
			return true
		}
		select {
		case <-tick.C:
		case <-deadline:
			return false
		}
	}
}
