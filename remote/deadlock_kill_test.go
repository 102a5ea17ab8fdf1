package remote_test

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// A peer killed (SIGKILL) while a sender streams to it over loopback: a
// dead-letter subscriber and an OnLinkDown hook both send to it, from
// the goroutines that close its links, and ask the node for its links
// (which takes the peer's lock). Nothing deadlocks, and every send they
// make once the peer is dead and no link to it is left is counted: it
// dials, the dial is refused, and the send is a dead letter carrying its
// message. (Sends made before were handed to a link: the kernel, or the
// link's count of what it never wrote, has them; a killed process says
// nothing of what it read.)
func TestCallbacksSendingToAKilledPeerDoNotDeadlockAndAreCounted(t *testing.T) {
	sys, n, b := pair(t)
	sender := sys.NewSender()
	var killed atomic.Bool
	gone := func() bool { // b is dead and we have no link to it
		if !killed.Load() {
			return false
		}
		for _, li := range n.Links() {
			if li.Node == "b" && li.Native+li.Pool > 0 {
				return false
			}
		}
		return true
	}

	var next atomic.Int64
	var mu sync.Mutex            // protects following
	var mustBeDead []int64       // Echo.N the callbacks sent once b was gone
	dead := map[int64]bool{}     // Echo.N dead-lettered on a
	var early, late atomic.Int64 // the subscriber's sends left, before and once b is gone
	var linkDowns atomic.Int64   // OnLinkDown calls for b
	var inCallback atomic.Int64  // callbacks running now
	early.Store(16)
	late.Store(16)
	callbackSend := func() {
		n := next.Add(1)
		if gone() {
			mu.Lock()
			mustBeDead = append(mustBeDead, n)
			mu.Unlock()
		}
		sender.SendNamed("b", "echo", &testpb.Echo{N: n, From: "callback"})
	}
	cancel := sys.SubscribeDeadLetters(func(d actor.DeadLetter) {
		inCallback.Add(1)
		defer inCallback.Add(-1)
		if e, ok := d.Message.(*testpb.Echo); ok {
			mu.Lock()
			dead[e.N] = true
			mu.Unlock()
		}
		budget := &early
		if gone() {
			budget = &late
		}
		if budget.Add(-1) >= 0 {
			callbackSend()
		}
	})
	t.Cleanup(cancel)
	n.AddHooks(remote.Hooks{OnLinkDown: func(p remote.PeerInfo, _ bool) {
		if p.Node != "b" {
			return
		}
		inCallback.Add(1)
		defer inCallback.Add(-1)
		linkDowns.Add(1)
		callbackSend()
	}})

	// A sender streams to b until told to stop; b is killed meanwhile.
	stop := make(chan struct{})
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			sender.SendNamed("b", "echo", &testpb.Echo{N: next.Add(1), From: "stream"})
		}
	}()
	eventually(t, "the stream under way", func() bool { return next.Load() > 100 })
	b.Kill()
	killed.Store(true)
	eventually(t, "no link to b left", gone)
	close(stop)
	waitReturns(t, "the stream's sends", streamed)

	// Sends made now are counted too, and each one's dead letter sets
	// the subscriber sending (until its budget is spent).
	after := make([]int64, 0, 10)
	for range 10 {
		n := next.Add(1)
		after = append(after, n)
		sender.SendNamed("b", "echo", &testpb.Echo{N: n, From: "after"})
	}
	eventually(t, "the callbacks returned", func() bool { return inCallback.Load() == 0 })

	mu.Lock()
	defer mu.Unlock()
	require.NotZero(t, linkDowns.Load())
	require.GreaterOrEqual(t, len(mustBeDead), 16, "the subscriber spent its budget once b was gone")
	for _, n := range append(mustBeDead, after...) {
		require.True(t, dead[n], "send %d (of %v by callbacks, %v after b was gone) is a dead letter", n, mustBeDead, after)
	}
}

// waitReturns ends the test binary with every goroutine's stack if done
// is not closed within a generous deadline: the test's cleanups would
// wait on a deadlocked goroutine too.
func waitReturns(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(os.Stderr, "--- FAIL: %s: deadlock: %s did not return in 20s; goroutines:\n%s\n", t.Name(), what, buf)
		os.Exit(2)
	}
}
