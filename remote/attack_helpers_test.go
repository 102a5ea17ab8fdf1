package remote

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// Helpers of the tests that attack a node as a peer holding the cookie:
// raw connections that complete the handshake of SPEC.md and then write
// whatever they like.

// rawLink completes a handshake with n as node name, incarnation inc,
// naming the link linkID (0: none), and returns the connection.
func rawLink(t testing.TB, n *Node, name string, inc, linkID uint64) net.Conn {
	t.Helper()
	return rawLinkAs(t, n, wire.Hello{Node: name, Inc: inc, Addr: "127.0.0.1:1", LinkID: linkID})
}

// rawLinkAs completes a handshake with n saying h (a pool link: Role
// rolePool and a Worker).
func rawLinkAs(t testing.TB, n *Node, h wire.Hello) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", n.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = wire.ClientHandshake(conn, []byte(testCookie), h, soon(), nil)
	require.NoError(t, err)
	return conn
}

// rawEndsAs are the ends of a raw link named name/inc to n.
func rawEndsAs(n *Node, name string, inc uint64) wire.Ends {
	return wire.Ends{SelfNode: name, SelfInc: inc, PeerNode: n.sys.Name(), PeerInc: n.sys.Incarnation()}
}

// frames encodes count elements made by mk(i), i from 0.
func frames(e wire.Ends, count int, mk func(i int) *wire.Element) []byte {
	var b []byte
	for i := range count {
		b = e.AppendFrame(b, mk(i))
	}
	return b
}

// flood writes b to conn in the background until it is all written, the
// node stops taking bytes for stall (it stopped reading: TCP pushes
// back), or conn closes. The result says how many bytes went and whether
// the node pushed back.
type flood struct {
	done     chan struct{}
	written  atomic.Int64
	pushback atomic.Bool
}

func startFlood(conn net.Conn, b []byte, stall time.Duration) *flood {
	f := &flood{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for len(b) > 0 {
			chunk := b[:min(len(b), 64<<10)]
			_ = conn.SetWriteDeadline(time.Now().Add(stall))
			n, err := conn.Write(chunk)
			f.written.Add(int64(n))
			b = b[n:]
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				f.pushback.Store(true)
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return f
}

func (f *flood) wait(t testing.TB) {
	t.Helper()
	select {
	case <-f.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the flood never ended")
	}
}

// readReplies reads frames from conn until n replies, skipping the rest
// (pings), and calls each with a reply and the size of its frame's body.
func readReplies(t *testing.T, conn net.Conn, e wire.Ends, n int, each func(el *wire.Element, size int)) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Minute)) // under -race beside the whole suite 32 refusals of 1 MiB took over 60 s
	defer conn.SetReadDeadline(time.Time{})
	fr := wire.NewFrameReader(conn, 1<<30)
	for got := 0; got < n; {
		k, body, err := fr.Next()
		require.NoError(t, err)
		if k != wire.KindReply {
			continue
		}
		var el wire.Element
		require.NoError(t, e.DecodeBody(k, body, &el))
		each(&el, len(body))
		got++
	}
}

// heapNow is the heap and stack memory in use after a collection.
func heapNow() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}

// goroutinesSettle waits until the goroutine count is at most want.
func goroutinesSettle(t *testing.T, want int) {
	t.Helper()
	waitFor(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= want })
}

// legit is a well-behaved peer calling echo on a node all along, with
// its latencies: it must be served whatever the attacker does.
type legit struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex // protects following
	lat  []time.Duration
	errs []error
}

func startLegit(t testing.TB, sys *actor.System, node string) *legit {
	g := &legit{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		for {
			select {
			case <-g.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			start := time.Now()
			_, err := sys.Call(ctx, node, "echo", &testpb.Echo{Text: "legit"})
			cancel()
			g.mu.Lock()
			g.lat = append(g.lat, time.Since(start))
			if err != nil {
				g.errs = append(g.errs, err)
			}
			g.mu.Unlock()
			time.Sleep(2 * time.Millisecond) // pacing, not synchronisation
		}
	}()
	t.Cleanup(g.halt)
	return g
}

func (g *legit) halt() {
	select {
	case <-g.stop:
	default:
		close(g.stop)
	}
	<-g.done
}

// check halts the peer and asserts every call succeeded; it returns the
// calls made and the 99th percentile and worst latency.
func (g *legit) check(t testing.TB) (calls int, p99, worst time.Duration) {
	t.Helper()
	g.halt()
	g.mu.Lock()
	defer g.mu.Unlock()
	require.Empty(t, g.errs, "the legitimate peer's calls failed")
	require.NotEmpty(t, g.lat, "the legitimate peer made no call")
	lat := append([]time.Duration(nil), g.lat...)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return len(lat), lat[len(lat)*99/100], lat[len(lat)-1]
}

// heardSinceLastStep reports whether every link n has with node's current
// incarnation was heard from at n's last liveness step (or opened since)
// or has read something since. So a step taken when it holds leaves no
// link of node silent for more than one interval: n pings each link at
// every step of an interval, and its pong is a read. Only for a node on
// a logical clock, from the goroutine that advances it (a link's seen is
// the step's).
func heardSinceLastStep(n *Node, node string) bool {
	p := (*transport)(n).current(node)
	if p == nil {
		return false
	}
	now := n.live.now().UnixNano()
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		if l.reads.Load()+l.dataIn.Load() == l.seen && l.lastRead.Load() != now {
			return false
		}
	}
	return len(p.links) > 0
}

// stepHeard advances clk by d, n's heartbeat interval, once every link n
// has with node was heard at or since n's last liveness step
// (heardSinceLastStep): so node, whose traffic and pongs (to the steps'
// pings) are real network traffic, is never silent to n however slow the
// machine, while a link that says nothing goes silent after exactly the
// window of steps.
func stepHeard(t *testing.T, clk *logicalClock, n *Node, node string, d time.Duration) {
	t.Helper()
	waitFor(t, node+" heard on every link since the last step", func() bool { return heardSinceLastStep(n, node) })
	clk.advance(d)
}
