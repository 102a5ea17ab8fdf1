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
	"github.com/mailroom-go/mailroom/internal/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// A peer killed (SIGKILL) while a sender streams to it over loopback: a
// dead-letter subscriber and an OnLinkDown hook both send to it, from
// the goroutines that closed its links. Nothing deadlocks, and every
// send they make is counted: once our outbound link to it is closed (it
// is, before OnLinkDown for it runs) a send dials, the dial is refused,
// and the send is a dead letter carrying its message. (The sends made
// before the kill were handed to the kernel, or to a link that counts
// what it never wrote; a killed process says nothing of what it read.)
func TestCallbacksSendingToAKilledPeerDoNotDeadlockAndAreCounted(t *testing.T) {
	sys, n, b := pair(t)
	sender := sys.NewSender()

	var next atomic.Int64
	var mu sync.Mutex           // protects following
	fromCallbacks := []int64{}  // Echo.N sent by the callbacks
	dead := map[int64]bool{}    // Echo.N dead-lettered on a
	var budget atomic.Int64     // sends the subscriber may still make
	var linkDowns atomic.Int64  // OnLinkDown of our outbound link to b
	var inCallback atomic.Int64 // callbacks running now
	budget.Store(16)
	callbackSend := func() {
		n := next.Add(1)
		mu.Lock()
		fromCallbacks = append(fromCallbacks, n)
		mu.Unlock()
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
		if budget.Add(-1) >= 0 {
			callbackSend()
		}
	})
	t.Cleanup(cancel)
	n.AddHooks(remote.Hooks{OnLinkDown: func(p remote.PeerInfo, outbound bool) {
		if p.Node != "b" || !outbound {
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
	eventually(t, "our outbound link to b down", func() bool { return linkDowns.Load() > 0 })
	close(stop)
	waitReturns(t, "the stream's sends", streamed)

	// Sends made now, with no link to b, are counted too.
	var after []int64
	for range 10 {
		n := next.Add(1)
		after = append(after, n)
		sender.SendNamed("b", "echo", &testpb.Echo{N: n, From: "after"})
	}
	eventually(t, "the callbacks returned", func() bool { return inCallback.Load() == 0 })

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, fromCallbacks)
	require.Len(t, fromCallbacks, int(16+linkDowns.Load()), "the subscriber spent its budget, the hook sent once a link-down")
	for _, n := range append(fromCallbacks, after...) {
		require.True(t, dead[n], "send %d (of %v by callbacks, %v after) is a dead letter", n, fromCallbacks, after)
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
