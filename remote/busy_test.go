package remote

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestAReaderBlockedOnAFullMailboxIsNotASilentLink: a link's reader
// delivers into a bounded mailbox with the Block policy and waits while
// the actor stalls, for longer than liveness allows a link to stay
// silent. The link is busy, not silent: it must not be declared dead
// (which lost and reordered everything in flight on it). Found by the
// chaos suite: a 10-second stall of a slow consumer killed its node's
// links from a healthy sender, lost ~485,000 sends and reordered 14,000.
//
// On logical time: recv's clock moves twenty intervals, stepped as its
// loop would, while its reader is seen waiting; the sender's stands still
// (its liveness is not under test), so it sends recv nothing meanwhile and
// only the reader's busy flag keeps the link.
func TestAReaderBlockedOnAFullMailboxIsNotASilentLink(t *testing.T) {
	const iv = 50 * time.Millisecond
	hb := Config{Liveness: Liveness{HeartbeatInterval: iv, HeartbeatMisses: 3}}
	clk := newLogicalClock()
	recv, rn, logs := startNodeAt(t, "recv", hb, clk)
	sender, sn, _ := startNodeAt(t, "sender", hb, newLogicalClock())
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var mu sync.Mutex
	var got []int64
	pid, err := recv.Spawn(actor.PropsFromFunc(func(c *actor.Context) {
		if e, ok := c.Message().(*testpb.Echo); ok {
			<-release // the consumer stalls
			mu.Lock()
			got = append(got, e.N)
			mu.Unlock()
		}
	}).WithMailbox(10, actor.Block))
	require.NoError(t, err)
	require.NoError(t, sn.Connect(context.Background(), "recv", rn.Addr()))

	const n = 100
	for i := range int64(n) {
		sender.Send(pid, &testpb.Echo{N: i})
	}
	// The reader is blocked delivering for 20 heartbeat intervals.
	l := onlyLink(t, rn, "sender")
	waitFor(t, "recv's reader waits delivering", l.dispatching.Load)
	for range 4 * 20 {
		clk.advance(iv / 4)
		require.False(t, l.isClosed(), "a busy link was closed")
	}
	once.Do(func() { close(release) })
	waitFor(t, "every message delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == n
	})
	for i, v := range got {
		require.Equal(t, int64(i), v, "in order")
	}
	require.NotContains(t, logs.String(), "missed", "a busy link was declared silent")
	require.Zero(t, rn.Stats().FailedByLiveness)
	require.Zero(t, rn.Stats().LinksSilent)
	require.Zero(t, sender.DeadLetters()+recv.DeadLetters())
}
