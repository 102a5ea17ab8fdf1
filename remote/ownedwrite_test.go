package remote

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// A call that finds its proxy idle is written by its caller's goroutine:
// no wake-up of the proxy. The first push waits for the proxy (the fence
// is passed there); under a crowd the proxy takes over and batches.
func TestAnIdleProxyIsWrittenByItsCaller(t *testing.T) {
	net := memnet.New()
	_, b, _ := startNode(t, "b", Config{Network: net, PoolSize: 1})
	asys, a, _ := startNode(t, "a", Config{Network: net, Seeds: []string{"b=" + b.Addr()}})
	ctx := context.Background()
	require.NoError(t, a.Connect(ctx, "b", ""))
	info, ok := a.Peer("b")
	require.True(t, ok)
	pl, err := a.dial.pool(ctx, "b", info.Incarnation, 0)
	require.NoError(t, err)

	// The proxy: flushes when woken, counts its wake-ups.
	var wakes atomic.Int64
	wake, stop := make(chan struct{}, 1), make(chan struct{})
	var owner sync.WaitGroup
	owner.Add(1)
	go func() {
		defer owner.Done()
		for {
			select {
			case <-wake:
			case <-stop:
				return
			}
			for {
				more, err := pl.Flush()
				if err != nil || !more {
					break
				}
			}
		}
	}()
	t.Cleanup(func() { close(stop); owner.Wait(); pl.Close(errors.New("test over")) })
	pl.OnQueued(func() {
		wakes.Add(1)
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	pool, err := (*host)(a).publishPool("b", info.Incarnation, []actor.PID{{Node: "a", Incarnation: asys.Incarnation(), ID: 1}}, poolOptions{Links: []*poolLink{pl}})
	require.NoError(t, err)
	t.Cleanup(func() { (*host)(a).unpublishPool(pool, errors.New("test over")) })
	stats := (*host)(a).poolStatsFor("b")

	call := func() {
		v, err := asys.Call(ctx, "b", "echo", &testpb.Echo{Text: "x"})
		require.NoError(t, err)
		require.Equal(t, "echo x", v.(*testpb.Echo).Text)
	}
	call()
	require.Equal(t, int64(1), wakes.Load(), "the first call waits for the proxy: the fence")
	waitFor(t, "the proxy's turn counted", func() bool { return stats.Batches.Load() == 1 })
	b0 := stats.Batches.Load()
	for range 20 {
		call()
	}
	require.Equal(t, int64(1), wakes.Load(), "calls into an idle queue wake no proxy")
	require.Equal(t, b0+20, stats.Batches.Load(), "each written alone")

	// A caller whose ctx can end never waits in a write: its proxy writes.
	for range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		_, err := asys.Call(ctx, "b", "echo", &testpb.Echo{Text: "x"})
		cancel()
		require.NoError(t, err)
	}
	require.Greater(t, wakes.Load(), int64(1), "calls with a ctx that can end wake the proxy")

	// A call's reply can come back before its writer counted the batch:
	// wait for the 1 + 20 + 5 calls so far to be counted.
	waitFor(t, "the calls so far counted", func() bool { return stats.Messages.Load() == 26 })
	const crowd = 200
	m0, b1 := stats.Messages.Load(), stats.Batches.Load()
	var wg sync.WaitGroup
	for range crowd {
		wg.Add(1)
		go func() {
			defer wg.Done()
			call()
		}()
	}
	wg.Wait()
	require.Equal(t, m0+crowd, stats.Messages.Load())
	require.Less(t, stats.Batches.Load()-b1, uint64(crowd), "a crowd is batched")
}
