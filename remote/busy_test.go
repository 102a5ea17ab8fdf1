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
func TestAReaderBlockedOnAFullMailboxIsNotASilentLink(t *testing.T) {
	hb := Config{Liveness: Liveness{HeartbeatInterval: 50 * time.Millisecond, HeartbeatMisses: 3}}
	recv, rn, logs := startNode(t, "recv", hb)
	sender, sn, _ := startNode(t, "sender", hb)
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
	stalled := time.Now()
	waitFor(t, "the stall", func() bool { return time.Since(stalled) > time.Second })
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
	require.Zero(t, sender.DeadLetters()+recv.DeadLetters())
}
