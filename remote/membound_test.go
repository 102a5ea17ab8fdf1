package remote

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// header is a frame header announcing a body of size bytes of kind k.
func header(k wire.Kind, size int) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(size+1)), byte(k))
}

// TestFrameBuffersGrowAsBytesArrive: 64 links each announce a 64 MiB
// frame and send only part of it (the issue measured 4.17 GB reserved by
// 64 such headers). Buffers hold what arrived, within the node's read
// budget: first 1 KiB each (no budget at all), then 200 KiB each (each
// buffer doubled to 256 KiB, 192 KiB of it from the budget). A
// legitimate peer is served meanwhile; when the links go, the budget is
// back to zero. The victim's clock stands still (logical time nobody
// moves), so the trickling links never go silent, whatever the load.
func TestFrameBuffersGrowAsBytesArrive(t *testing.T) {
	_, victim, _ := startNodeAt(t, "victim", Config{}, newLogicalClock())
	require.Equal(t, 64<<20, victim.Config().Limits.MaxFrameSize)
	good, gn, _ := startNode(t, "good", Config{})
	require.NoError(t, gn.Connect(context.Background(), "victim", victim.Addr()))
	healthy(t, good, "victim")
	h0 := heapNow()

	const links = 64
	conns := make([]net.Conn, links)
	for i := range conns {
		conns[i] = rawLink(t, victim, fmt.Sprintf("trickle-%d", i), uint64(100+i), 0)
		_, err := conns[i].Write(append(header(wire.KindSend, 64<<20-1), make([]byte, 1<<10)...))
		require.NoError(t, err)
	}
	waitFor(t, "1 KiB read on every link", func() bool { return linksReading(victim, "trickle-") == links })
	h1 := heapNow()
	require.Zero(t, victim.Stats().ReadBudgetInUse, "1 KiB per link needs no budget")
	healthy(t, good, "victim")

	more := make([]byte, 199<<10)
	for _, c := range conns {
		_, err := c.Write(more)
		require.NoError(t, err)
	}
	want := int64(links * (256<<10 - wire.LinkAllowance))
	waitFor(t, "200 KiB read on every link", func() bool { return victim.Stats().ReadBudgetInUse == want })
	h2 := heapNow()
	healthy(t, good, "victim")
	t.Logf("64 frames announcing 64 MiB: heap+stacks %.1f MiB; after 1 KiB each %.1f MiB; after 200 KiB each %.1f MiB (budget in use %d KiB)",
		float64(h0)/(1<<20), float64(h1)/(1<<20), float64(h2)/(1<<20), want>>10)
	require.Less(t, h1-h0, int64(16<<20), "64 announced frames reserved memory")
	require.Less(t, h2-h0, int64(48<<20), "buffers beyond what arrived")

	for _, c := range conns {
		c.Close()
	}
	waitFor(t, "the budget given back", func() bool { return victim.Stats().ReadBudgetInUse == 0 })
}

// linksReading counts the links of peers named prefix... whose reader has
// read frame bytes.
func linksReading(n *Node, prefix string) int {
	c := 0
	for _, p := range n.livePeers() {
		if !strings.HasPrefix(p.name, prefix) {
			continue
		}
		p.mu.Lock()
		for l := range p.links {
			if l.reads.Load() > 0 {
				c++
			}
		}
		p.mu.Unlock()
	}
	return c
}

// TestReadBudgetWaitsThenClosesTheLink: the node-wide read budget is
// 1 MiB. One link takes nearly all of it with a large frame that arrives
// slowly; another link's large frame waits for budget (its reader stops
// reading) for the heartbeat window, then its link closes with the
// reason. The first frame, once finished, is handled and its budget is
// given back.
//
// The victim's clock stands still (logical time nobody moves): the
// holder's link, trickling, can never be closed as silent whatever the
// load. The waiter's wait is on real time: the read budget's patience is
// a timer the reader waits on (readbudget.go), not a liveness step; the
// trickle lasts about 2 s against a patience of 150 ms.
func TestReadBudgetWaitsThenClosesTheLink(t *testing.T) {
	sys, victim, logs := startNodeAt(t, "victim", Config{Liveness: Liveness{HeartbeatInterval: 50 * time.Millisecond, HeartbeatMisses: 3}, Limits: Limits{MaxFrameSize: 1 << 20, ReadBudgetBytes: 1 << 20}}, newLogicalClock())
	require.NoError(t, sys.RegisterTypes(&testpb.Blob{}))
	got := make(chan int, 1)
	_, err := sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if b, ok := c.Message().(*testpb.Blob); ok {
			got <- len(b.Data)
		}
	}), "sink")
	require.NoError(t, err)
	e := rawEndsAs(victim, "holder", 11)
	typ, payload, err := marshal(&testpb.Blob{Data: make([]byte, 1000<<10)})
	require.NoError(t, err)
	full := e.AppendFrame(nil, &wire.Element{Kind: wire.KindSend, ToName: "sink", Type: typ, Payload: payload})
	body := len(full) - wire.FrameHeader - 1

	holder := rawLink(t, victim, "holder", 11, 0)
	_, err = holder.Write(full[:600<<10]) // past 512 KiB: the buffer grows to the whole body
	require.NoError(t, err)
	waitFor(t, "the budget taken", func() bool { return victim.Stats().ReadBudgetInUse == int64(body-wire.LinkAllowance) })
	// The rest trickles in (on the wall clock it kept the holder's link
	// from being silent; here the victim's clock stands still).
	trickled := make(chan error, 1)
	go func() {
		rest := full[600<<10:]
		for len(rest) > 0 {
			k := min(len(rest), 2<<10)
			if _, err := holder.Write(rest[:k]); err != nil {
				trickled <- err
				return
			}
			rest = rest[k:]
			time.Sleep(10 * time.Millisecond) // pacing the trickle, not synchronisation
		}
		trickled <- nil
	}()

	waiter := rawLink(t, victim, "waiter", 12, 0)
	_, err = waiter.Write(append(header(wire.KindSend, 512<<10), make([]byte, 200<<10)...))
	require.NoError(t, err)
	assertClosedByPeer(t, waiter)
	waitFor(t, "the reason logged", func() bool { return strings.Contains(logs.String(), "read budget exhausted") })
	st := victim.Stats()
	require.GreaterOrEqual(t, st.BudgetTimeouts, uint64(1))
	require.GreaterOrEqual(t, st.ReadBudgetWaits, uint64(1))

	require.NoError(t, <-trickled)
	select {
	case n := <-got:
		require.Equal(t, 1000<<10, n)
	case <-time.After(10 * time.Second):
		t.Fatal("the finished frame was not handled")
	}
	waitFor(t, "the budget given back", func() bool { return victim.Stats().ReadBudgetInUse == 0 })
}

// TestMessagesOverMaxMessageSizeAreRefusedBeforeDecoding: 60 MiB of
// packed repeated int64 once decoded into 2.17 GB. Now an element larger
// than MaxMessageSize (default 4 MiB) is refused before decoding: a call
// gets the error reply bad_message saying why, a send is a counted dead
// letter, and the link stays up. A node never sends one (ErrBadMessage,
// not executed), and a result over the caller's bound is refused (the
// call ran: executed).
func TestMessagesOverMaxMessageSizeAreRefusedBeforeDecoding(t *testing.T) {
	sys, victim, _ := startNode(t, "victim", Config{})
	require.NoError(t, sys.RegisterTypes(&testpb.Numbers{}))
	require.Equal(t, 4<<20, victim.Config().Limits.MaxMessageSize)
	var decoded int
	require.NoError(t, sys.Register("sum", func(_ context.Context, arg proto.Message) (proto.Message, error) {
		decoded++
		return &testpb.Echo{N: int64(len(arg.(*testpb.Numbers).Values))}, nil
	}))
	// 21 MB of varints of 7 bytes: 3 M values, 24 MB as []int64.
	values := make([]int64, 3_000_000)
	for i := range values {
		values[i] = 1 << 42
	}
	typ, payload, err := marshal(&testpb.Numbers{Values: values})
	require.NoError(t, err)
	values = nil
	require.Greater(t, len(payload), 20<<20)
	e := rawEnds(victim)
	call := e.AppendFrame(nil, &wire.Element{Kind: wire.KindCall, ID: 1, Fn: "sum", Type: typ, Payload: payload})
	send := e.AppendFrame(nil, &wire.Element{Kind: wire.KindSend, ToName: "nobody", Type: typ, Payload: payload})
	payload = nil
	dead := sys.DeadLetters()

	conn := rawPeer(t, victim, testCookie)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, err = conn.Write(call)
	require.NoError(t, err)
	reply := readReply(t, conn, e)
	runtime.ReadMemStats(&m1)
	require.Equal(t, wire.StatusError, reply.Status)
	require.Equal(t, "bad_message", reply.Code)
	require.Contains(t, reply.Message, "exceeds MaxMessageSize 4194304")
	_, err = conn.Write(send)
	require.NoError(t, err)
	waitFor(t, "the send counted as a dead letter", func() bool { return sys.DeadLetters() == dead+1 })
	// Reading the frame allocates its growing buffer: the doublings up
	// to it (less than its size) and the last step (its size), under 3x.
	// Decoding it would allocate 24 MB more for the values.
	allocated := int64(m1.TotalAlloc - m0.TotalAlloc)
	t.Logf("a call of %.1f MB refused: %.1f MB allocated while reading it", float64(len(call))/1e6, float64(allocated)/1e6)
	require.Zero(t, decoded)
	require.Less(t, allocated, int64(3*len(call)), "decoded anyway")
	require.Equal(t, uint64(2), victim.Stats().TooLarge)
	require.Zero(t, victim.Stats().BadFrames, "not a wire error: the link stays up")

	// The link is still up: a call of the right size is answered.
	typ, small, err := marshal(&testpb.Numbers{Values: []int64{1, 2, 3}})
	require.NoError(t, err)
	_, err = conn.Write(e.AppendFrame(nil, &wire.Element{Kind: wire.KindCall, ID: 2, Fn: "sum", Type: typ, Payload: small}))
	require.NoError(t, err)
	reply = readReply(t, conn, e)
	require.Equal(t, wire.StatusOK, reply.Status)

	// The sending side refuses to send one, and refuses a result too large.
	caller, cn, _ := startNode(t, "caller", Config{Limits: Limits{MaxMessageSize: 64 << 10}})
	require.NoError(t, caller.RegisterTypes(&testpb.Numbers{}))
	require.NoError(t, cn.Connect(context.Background(), "victim", victim.Addr()))
	_, err = caller.Call(context.Background(), "victim", "sum", &testpb.Numbers{Values: make([]int64, 64<<10)})
	require.ErrorIs(t, err, actor.ErrBadMessage)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	require.NoError(t, sys.Register("big", func(context.Context, proto.Message) (proto.Message, error) {
		return &testpb.Numbers{Values: make([]int64, 64<<10)}, nil
	}))
	_, err = caller.Call(context.Background(), "victim", "big", &testpb.Echo{})
	require.ErrorIs(t, err, actor.ErrBadMessage)
	require.Equal(t, actor.Executed, actor.Outcome(err), "it ran; its result was refused: %v", err)
}
