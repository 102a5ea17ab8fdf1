package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// Callbacks that send to the peer whose link is failing. A link too full
// for the fence or the publish barrier is closed while the peer's path
// lock is held (it orders native sends against the change of path), and
// its close gives its unsent frames to the dead-letter subscribers and
// tells the OnLinkDown hooks. Both send to that same peer here: a native
// send takes the path lock shared, so a close whose effects ran under the
// lock deadlocked its own goroutine. The close's effects now run once
// every runtime lock is released (node.go's lock order).
//
// The network is memnet's buffered one, so the fullness is decided by
// construction: a held connection whose buffer is full blocks the link's
// writer mid-write, and the next frame waits in the link's buffer, over
// its limit. No timer fires (HeartbeatInterval is an hour).

const (
	dlConnBuffer = 16 << 10 // what the held connection takes before the writer blocks
	dlLinkBuffer = 1 << 10  // LinkBufferBytes
	// dlCallbackSends bounds the sends the dead-letter subscriber makes
	// (each may be a dead letter itself).
	dlCallbackSends = 8
)

// dlNet is two nodes whose callbacks on a send to b.
type dlNet struct {
	net        *memnet.Network
	asys, bsys *actor.System
	a, b       *Node
	sink       *orderSink
	sender     *actor.Sender

	next      atomic.Int64 // the last Echo.N sent
	attempts  atomic.Int64 // sends made (by the test and by callbacks)
	deadA     atomic.Int64 // dead letters on a
	deadB     atomic.Int64 // dead letters on b
	linkDowns atomic.Int64 // OnLinkDown calls for b
	budget    atomic.Int64 // sends the dead-letter subscriber may still make
}

func startDLNet(t *testing.T) *dlNet {
	t.Helper()
	d := &dlNet{net: memnet.NewBuffered(dlConnBuffer)}
	d.budget.Store(dlCallbackSends)
	cfg := Config{Network: d.net, Liveness: Liveness{HeartbeatInterval: time.Hour}, PoolSize: 1, LinkBufferBytes: dlLinkBuffer}
	d.bsys, d.b, _ = startNode(t, "b", cfg)
	d.sink = startOrderSink(t, d.bsys)
	cfg.Seeds = []string{"b=" + d.b.Addr()}
	d.asys, d.a, _ = startNode(t, "a", cfg)
	require.NoError(t, d.a.Connect(context.Background(), "b", ""))
	d.sender = d.asys.NewSender()

	unsubA := d.asys.SubscribeDeadLetters(func(actor.DeadLetter) {
		d.deadA.Add(1)
		if d.budget.Add(-1) >= 0 {
			d.send("") // on the goroutine that dropped it, maybe under a close
		}
	})
	unsubB := d.bsys.SubscribeDeadLetters(func(actor.DeadLetter) { d.deadB.Add(1) })
	t.Cleanup(func() { unsubA(); unsubB() })
	d.a.AddHooks(Hooks{OnLinkDown: func(p PeerInfo, _ bool) {
		if p.Node == "b" {
			d.linkDowns.Add(1)
			d.send("")
		}
	}})
	return d
}

// send sends the next Echo to b's order sink, with a body of text.
func (d *dlNet) send(text string) int64 {
	n := d.next.Add(1)
	d.attempts.Add(1)
	d.sender.SendNamed("b", "order", &testpb.Echo{N: n, Text: text})
	return n
}

// enqueueNative puts a send of Echo{N: next, Text: text} straight on the
// native link, as a send made just before a pool took over.
func (d *dlNet) enqueueNative(t *testing.T, l *link, text string) {
	t.Helper()
	n := d.next.Add(1)
	d.attempts.Add(1)
	_, err := l.enqueueEl(&wire.Element{Kind: wire.KindSend, ToName: "order", Sender: d.sender.PID(), Type: "mailroom.testpb.Echo", Msg: &testpb.Echo{N: n, Text: text}}, false, nil)
	require.NoError(t, err)
}

// overfill holds the native link's connection and leaves it blocked
// mid-write, with a send waiting in the link's buffer of size bytes
// (bodies of its frame): two sends that can only end as dead letters
// when the link is closed, or delivered once the connection is released.
func (d *dlNet) overfill(t *testing.T, queued int, viaRoute bool) (*link, *memnet.Conn) {
	t.Helper()
	_, native := d.a.dial.live("b")
	require.NotNil(t, native)
	conn := d.net.Conns(d.b.Addr())[0]
	require.Same(t, conn, native.conn)
	// What the link carries already (a publish barrier's ping) is
	// written and answered first.
	waitFor(t, "the native link written and its pings answered", func() bool {
		native.mu.Lock()
		defer native.mu.Unlock()
		return len(native.buf) == 0 && native.pongs.Load() == native.pings
	})
	conn.Hold()
	put := func(text string) {
		if viaRoute {
			d.send(text)
		} else {
			d.enqueueNative(t, native, text)
		}
	}
	put(strings.Repeat("x", dlConnBuffer+1<<10)) // more than the connection takes: the writer blocks in it
	waitFor(t, "the writer blocked on the held connection", func() bool { return conn.Buffered() == dlConnBuffer })
	put(strings.Repeat("y", queued)) // in the empty buffer, past the limit
	waitFor(t, "a send waits in the link's buffer", func() bool {
		native.mu.Lock()
		defer native.mu.Unlock()
		return len(native.buf) > queued
	})
	return native, conn
}

// settled waits until every send is delivered on b or counted as a dead
// letter on either side, and checks that nothing was counted twice.
func (d *dlNet) settled(t *testing.T) {
	t.Helper()
	count := func() (delivered, dead, attempts int64) {
		seen := make(map[int64]bool)
		for _, n := range d.sink.received() {
			seen[n] = true
		}
		return int64(len(seen)), d.deadA.Load() + d.deadB.Load(), d.attempts.Load()
	}
	waitFor(t, "every send delivered or counted", func() bool {
		delivered, dead, attempts := count()
		return delivered+dead >= attempts
	})
	delivered, dead, attempts := count()
	require.Equal(t, attempts, delivered+dead, "delivered %d, dead letters %d, of %d sends", delivered, dead, attempts)
	require.Len(t, d.sink.received(), int(delivered), "nothing delivered twice")
}

// noDeadlock ends the test binary with every goroutine's stack if done
// is not closed within a generous deadline. It does not fail the test the
// usual way: its cleanups (stopping the nodes) would wait on the
// deadlocked goroutine too, and the binary would hang until -timeout
// without saying why.
func noDeadlock(t *testing.T, what string, done <-chan struct{}) {
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

// A publish whose barrier ping finds the native link too full closes the
// link under the path lock (errBarrierFull): the dead letters of its
// unsent sends and its OnLinkDown hook send to b, natively.
func TestCallbacksSendingToThePeerOfAFullPublishBarrierDoNotDeadlock(t *testing.T) {
	d := startDLNet(t)
	native, conn := d.overfill(t, dlLinkBuffer+ctlHeadroom, true)
	h := dialHandPool(t, d.a, "b")

	done := make(chan struct{})
	var pool *pubPool
	var err error
	go func() {
		defer close(done)
		pool, err = (*host)(d.a).publishPool("b", h.pl.Incarnation(), []actor.PID{{Node: "a", Incarnation: d.asys.Incarnation(), ID: 1}}, poolOptions{Links: []*poolLink{h.pl}})
	}()
	noDeadlock(t, "publishPool", done)
	require.NoError(t, err)
	h.pool = pool
	require.True(t, native.isClosed())
	require.ErrorIs(t, native.reason(), errBarrierFull)

	conn.Release()
	d.settled(t)
	require.Equal(t, uint64(2), d.a.Stats().DroppedUnsent, "the send cut short in the write and the one in the buffer")
	require.NotZero(t, d.linkDowns.Load())
}

// An unpublish while the peer lives fences the pool's links on the native
// link; one too full for the fence is closed under the path lock
// (errFenceFull).
func TestCallbacksSendingToThePeerOfAFullUnpublishFenceDoNotDeadlock(t *testing.T) {
	d := startDLNet(t)
	h := startHandPool(t, d.asys, d.a, "b")
	native, conn := d.overfill(t, dlLinkBuffer, false)

	done := make(chan struct{})
	go func() {
		defer close(done)
		(*host)(d.a).unpublishPool(h.pool, errors.New("test: unpublished"))
	}()
	noDeadlock(t, "unpublishPool", done)
	require.True(t, native.isClosed())
	require.ErrorIs(t, native.reason(), errFenceFull)
	h.drain(t)

	conn.Release()
	d.settled(t)
	require.Equal(t, uint64(2), d.a.Stats().DroppedUnsent)
	require.NotZero(t, d.linkDowns.Load())
}

// A publish that takes over from a pool fences the old pool's links on
// every other link; the native one, too full for the fence, is closed
// under the path lock.
func TestCallbacksSendingToThePeerOfAFullTakeoverFenceDoNotDeadlock(t *testing.T) {
	d := startDLNet(t)
	h1 := startHandPool(t, d.asys, d.a, "b")
	native, conn := d.overfill(t, dlLinkBuffer, false)
	h2 := dialHandPool(t, d.a, "b")

	done := make(chan struct{})
	var mu sync.Mutex // protects err
	var err error
	go func() {
		defer close(done)
		pool, perr := (*host)(d.a).publishPool("b", h2.pl.Incarnation(), []actor.PID{{Node: "a", Incarnation: d.asys.Incarnation(), ID: 1}}, poolOptions{Links: []*poolLink{h2.pl}})
		mu.Lock()
		h2.pool, err = pool, perr
		mu.Unlock()
	}()
	noDeadlock(t, "publishPool replacing a pool", done)
	mu.Lock()
	require.NoError(t, err)
	mu.Unlock()
	require.True(t, native.isClosed())
	require.ErrorIs(t, native.reason(), errFenceFull)
	h1.drain(t)

	conn.Release()
	d.settled(t)
	require.Equal(t, uint64(2), d.a.Stats().DroppedUnsent)
	require.NotZero(t, d.linkDowns.Load())
}

// A pool link whose write fails drops the sends of its queue as dead
// letters. They were published during the link's turn (fmu) and before
// the queue gave their room back: a subscriber's send to the same peer
// went into that same full queue and waited for room only its own
// goroutine could free. Now the queue is closed at the failure (the
// subscriber's send falls back to the native path) and the dead letters
// are published after the turn.
func TestCallbacksSendingToThePeerOfAFailedPoolWriteDoNotDeadlock(t *testing.T) {
	d := startDLNet(t)
	h := dialHandPool(t, d.a, "b")
	pool, err := (*host)(d.a).publishPool("b", h.pl.Incarnation(), []actor.PID{{Node: "a", Incarnation: d.asys.Incarnation(), ID: 1}}, poolOptions{Links: []*poolLink{h.pl}, QueueEntries: 2})
	require.NoError(t, err)
	h.pool = pool
	d.send("") // written: the link is past its fence
	waitFor(t, "the first send delivered", func() bool { return len(d.sink.received()) == 1 })
	h.halt() // the test takes the proxy's turn
	d.send("")
	d.send("")
	waitFor(t, "the queue full", func() bool { return h.pl.QueueLen() == 2 })
	conn := d.net.Conns(d.b.Addr())[1]
	require.Same(t, conn, h.pl.l.conn.(*roleConn).Conn)
	require.NoError(t, conn.Close()) // the batch's write fails

	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = h.pl.Flush()
	}()
	noDeadlock(t, "a pool link's Flush", done)
	d.settled(t)
	require.GreaterOrEqual(t, d.deadA.Load(), int64(2), "the two queued sends")
}
