package proxypool

import (
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestRequestAsyncKeepsTheActorResponsive is issue 24's acceptance for
// non-blocking requests: an actor on node a holding 1,000 outstanding
// RequestAsync to a slow actor on node b (it answers none until the end)
// keeps answering pings, p99 under 5 ms; then every continuation runs,
// with its answer.
func TestRequestAsyncKeepsTheActorResponsive(t *testing.T) {
	const outstanding, pings = 1000, 300
	a, b := pair(t, memnet.New(), 2, Config{})
	waitStatus(t, a.pool, "b", Connected)
	release := make(chan struct{})
	var held atomic.Int64
	_, err := b.sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if m, ok := c.Message().(*testpb.Echo); ok {
			r := c.Defer()
			held.Add(1)
			go func() { <-release; r.Reply(m, nil) }()
		}
	}), "slow")
	require.NoError(t, err)
	slow, ok := b.sys.Lookup("slow")
	require.True(t, ok)

	answered := make(chan error, outstanding)
	asker, err := a.sys.SpawnFunc(func(c *actor.Context) {
		switch c.Message().(type) {
		case *testpb.Echo: // start the requests
			for i := 0; i < outstanding; i++ {
				c.RequestAsync(ctxT(t), slow, &testpb.Echo{N: int64(i)}, func(c *actor.Context, reply any, err error) {
					if err == nil && reply.(*testpb.Echo) == nil {
						err = errNoReply
					}
					answered <- err
				})
			}
			c.Respond("started")
		case string:
			c.Respond("pong")
		}
	})
	require.NoError(t, err)
	_, err = a.sys.Request(ctxT(t), asker, &testpb.Echo{})
	require.NoError(t, err)
	eventually(t, "1,000 requests held by the slow actor", func() bool { return held.Load() == outstanding })

	// A machine shared with other work stalls a goroutine now and then
	// for longer than 5 ms: the best of three rounds is what the actor
	// can do. A blocked actor would answer no ping in any round (the
	// slow actor answers nothing until release).
	best := time.Hour
	for round := 0; round < 3 && best >= 5*time.Millisecond; round++ {
		lat := make([]time.Duration, 0, pings)
		for i := 0; i < pings; i++ {
			start := time.Now()
			v, err := a.sys.Request(ctxT(t), asker, "ping")
			lat = append(lat, time.Since(start))
			require.NoError(t, err)
			require.Equal(t, "pong", v)
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p99 := lat[len(lat)*99/100]
		t.Logf("round %d: %d pings with %d requests outstanding: p50 %v, p99 %v, worst %v", round, pings, outstanding, lat[len(lat)/2], p99, lat[len(lat)-1])
		best = min(best, p99)
	}
	require.Less(t, best, 5*time.Millisecond)
	require.EqualValues(t, outstanding, held.Load(), "every request still outstanding while the pings were answered")

	close(release)
	for i := 0; i < outstanding; i++ {
		require.NoError(t, <-answered)
	}
	require.Zero(t, a.sys.DroppedContinuations())
}

var errNoReply = errorString("no reply")

type errorString string

func (e errorString) Error() string { return string(e) }
