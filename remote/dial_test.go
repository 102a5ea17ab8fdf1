package remote

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestACrowdOfSendersToADeadNodeFailsFast: when a node dies, every
// sender to it dials. Senders that waited on a dial must get its
// failure, not queue up for dials of their own one after another: found
// by the chaos suite, where 50,000 writers to a SIGKILLed node each
// waited DialTimeout+HandshakeTimeout (10 s) although every dial was
// refused at once.
func TestACrowdOfSendersToADeadNodeFailsFast(t *testing.T) {
	sys, n, _ := startNode(t, "a", Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens: every dial is refused
	n.mu.Lock()
	n.slotLocked("dead").addr = addr
	n.mu.Unlock()

	const senders, callers = 5000, 500
	start := time.Now()
	errs := make(chan error, senders+callers)
	var wg sync.WaitGroup
	for i := range senders + callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i < senders {
				errs <- sys.TrySend(actor.PID{Node: "dead", Incarnation: 1, ID: 1}, &testpb.Echo{})
				return
			}
			_, err := sys.NewSender().Call(context.Background(), "dead", "echo", &testpb.Echo{})
			errs <- err
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		require.ErrorIs(t, err, actor.ErrUnreachable)
		require.Equal(t, actor.NotExecuted, actor.Outcome(err))
		require.Contains(t, err.Error(), "connection refused", "the dial's own failure, not a timeout")
	}
	t.Logf("%d senders and %d callers failed in %v", senders, callers, elapsed)
	require.Less(t, elapsed, 5*time.Second, "a refused dial fails its waiters at once")
}
