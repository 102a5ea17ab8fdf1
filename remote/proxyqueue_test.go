package remote

import (
	"strconv"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// queueFor is a proxy queue as Publish configures one, counting wake-ups.
func queueFor(opts queueOptions) (*proxyQueue, *int) {
	wakes := new(int)
	if opts.maxBody == 0 {
		opts.maxBody = 1 << 20
	}
	return &proxyQueue{opts: opts, wake: func() { *wakes++ }}, wakes
}

func sendEntry(t *testing.T, n int64) []byte {
	t.Helper()
	el := wire.Element{Kind: wire.KindSend, ToName: "sink", Type: "mailroom.testpb.Echo", Msg: &testpb.Echo{N: n}}
	b, err := fuzzEnds.EncodeElement(nil, &el)
	require.NoError(t, err)
	return b
}

// decodeBatch reads a batch frame back as the peer does and returns the
// Echo.N of each send in it.
func decodeBatch(t *testing.T, frame []byte) []int64 {
	t.Helper()
	require.Equal(t, len(frame), wire.FrameLen(frame), "one whole frame")
	require.Equal(t, wire.KindBatch, wire.Kind(frame[wire.FrameHeader]))
	peer := wire.Ends{SelfNode: fuzzEnds.PeerNode, SelfInc: fuzzEnds.PeerInc, PeerNode: fuzzEnds.SelfNode, PeerInc: fuzzEnds.SelfInc}
	it, err := peer.NewBatchIter(frame[wire.FrameHeader+1:])
	require.NoError(t, err)
	var got []int64
	for {
		var el wire.Element
		ok, err := it.Next(&el)
		require.NoError(t, err)
		if !ok {
			return got
		}
		var e testpb.Echo
		require.NoError(t, proto.Unmarshal(el.Payload, &e))
		got = append(got, e.N)
	}
}

func TestProxyQueueBatchesFramesInOrderAndWakesOncePerTurn(t *testing.T) {
	q, wakes := queueFor(queueOptions{batch: 3})
	for i := range int64(7) {
		require.NoError(t, q.push(sendEntry(t, i), nil, false))
	}
	require.Equal(t, 1, *wakes, "only the first push into an idle queue wakes the proxy")
	n, _ := q.depth()
	require.Equal(t, 7, n)

	batches := q.take(nil)
	require.Len(t, batches, 3, "batches of at most 3")
	var got []int64
	for _, bb := range batches {
		got = append(got, decodeBatch(t, bb.frame())...)
		q.done(bb)
	}
	require.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6}, got)

	require.NoError(t, q.push(sendEntry(t, 7), nil, false))
	require.Equal(t, 1, *wakes, "still scheduled: the proxy has not found the queue empty yet")
	require.True(t, q.idle(), "more arrived during the turn")
	batches = q.take(batches[:0])
	require.Equal(t, []int64{7}, decodeBatch(t, batches[0].frame()))
	q.done(batches[0])
	require.False(t, q.idle())
	require.NoError(t, q.push(sendEntry(t, 8), nil, false))
	require.Equal(t, 2, *wakes, "idle again: the next push wakes the proxy")
}

func TestProxyQueueSplitsBatchesAtTheFrameSize(t *testing.T) {
	e := sendEntry(t, 1)
	q, _ := queueFor(queueOptions{maxBody: 2*len(e) + 1})
	for range 5 {
		require.NoError(t, q.push(e, nil, false))
	}
	batches := q.take(nil)
	require.Len(t, batches, 3, "two entries per frame body, then one")
	for _, bb := range batches {
		require.LessOrEqual(t, len(bb.entries()), 2*len(e)+1)
	}
}

func TestProxyQueueBoundsFailFast(t *testing.T) {
	e := sendEntry(t, 1)
	t.Run("entries", func(t *testing.T) {
		q, _ := queueFor(queueOptions{entries: 2, failFast: true})
		require.NoError(t, q.push(e, nil, false))
		require.NoError(t, q.push(e, nil, false))
		require.ErrorIs(t, q.push(e, nil, false), actor.ErrOverloaded)
		require.NoError(t, q.push(e, nil, true), "a forced entry (a reply) ignores the bound")
		batches := q.take(nil)
		require.ErrorIs(t, q.push(e, nil, false), actor.ErrOverloaded, "taken is not written: still held")
		for _, bb := range batches {
			q.done(bb)
		}
		require.NoError(t, q.push(e, nil, false), "written: room again")
	})
	t.Run("bytes", func(t *testing.T) {
		q, _ := queueFor(queueOptions{bytes: int64(len(e)) + 1, failFast: true})
		big := make([]byte, 10*len(e))
		copy(big, e)
		require.NoError(t, q.push(big, nil, false), "larger than the bound, into an empty queue")
		require.ErrorIs(t, q.push(e, nil, false), actor.ErrOverloaded)
		_, held := q.depth()
		require.Equal(t, int64(len(big)), held)
	})
}

func TestProxyQueueBlockWaitsForRoomAndCloseWakesWaiters(t *testing.T) {
	e := sendEntry(t, 1)
	q, _ := queueFor(queueOptions{entries: 1})
	require.NoError(t, q.push(e, nil, false))
	res := make(chan error, 2)
	go func() { res <- q.push(e, nil, false) }()
	waitFor(t, "the second caller waits", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.room != nil
	})
	for _, bb := range q.take(nil) {
		q.done(bb)
	}
	require.NoError(t, <-res, "room made by a write lets it in")

	go func() { res <- q.push(e, nil, false) }()
	waitFor(t, "a third caller waits", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.room != nil
	})
	q.close()
	require.ErrorIs(t, <-res, errPathClosed, "a closed queue sends its waiters elsewhere")
	require.ErrorIs(t, q.push(e, nil, true), errPathClosed)
	n, _ := q.depth()
	require.Equal(t, 1, n, "what was queued stays for the proxy to write or drop")
}

func TestProxyQueueCutsCallsAbandonedWhileQueued(t *testing.T) {
	q, _ := queueFor(queueOptions{})
	calls := make([]*pendingCall, 4)
	for i := range calls {
		calls[i] = &pendingCall{via: &pubPool{}} // queued through a pool
		el := wire.Element{Kind: wire.KindCall, ID: uint64(i), Fn: "f", Type: "mailroom.testpb.Echo", Msg: &testpb.Echo{N: int64(i)}}
		b, err := fuzzEnds.EncodeElement(nil, &el)
		require.NoError(t, err)
		require.NoError(t, q.push(b, calls[i], false))
		require.NoError(t, q.push(sendEntry(t, int64(10+i)), nil, false))
	}
	// Calls 0 and 2 are answered "not sent" while they wait (ctx ended).
	require.False(t, calls[0].wasSent())
	require.False(t, calls[2].wasSent())
	bb := q.take(nil)[0]
	var cut []int
	for _, c := range bb.calls {
		if !c.pc.markSent() {
			cut = append(cut, c.off)
		}
	}
	bb.cut(cut)
	require.Equal(t, 6, bb.n)
	peer := wire.Ends{SelfNode: "b", SelfInc: 2, PeerNode: "a", PeerInc: 1}
	frame := bb.frame()
	it, err := peer.NewBatchIter(frame[wire.FrameHeader+1:])
	require.NoError(t, err)
	var kinds []string
	for {
		var el wire.Element
		ok, err := it.Next(&el)
		require.NoError(t, err)
		if !ok {
			break
		}
		var e testpb.Echo
		require.NoError(t, proto.Unmarshal(el.Payload, &e))
		kinds = append(kinds, el.Kind.String()+":"+strconv.FormatInt(e.N, 10))
	}
	require.Equal(t, []string{"send:10", "call:1", "send:11", "send:12", "call:3", "send:13"}, kinds)
	require.True(t, calls[1].wasSent() && calls[3].wasSent())
}

func TestProxyQueueKeepsSmallBuffersWhenIdle(t *testing.T) {
	q, _ := queueFor(queueOptions{batch: 100})
	big := make([]byte, 2000)
	copy(big, sendEntry(t, 1))
	for range 1000 {
		require.NoError(t, q.push(big, nil, false))
	}
	batches := q.take(nil)
	require.Len(t, batches, 10)
	for _, bb := range batches {
		q.done(bb)
	}
	require.False(t, q.idle())
	q.sweep() // the turn since the last sweep: kept
	require.GreaterOrEqual(t, len(q.spare), 10, "a queue recycles its buffers")
	q.sweep() // idle through a whole sweep
	require.LessOrEqual(t, len(q.spare), idleSpares, "an idle queue keeps at most two buffers")
	require.LessOrEqual(t, q.spareBytes(), idleSpareCap, "of at most 64 KiB in all")
	_, held := q.depth()
	require.Zero(t, held)
}
