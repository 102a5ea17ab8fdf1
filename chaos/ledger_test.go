//go:build chaos

package chaos

import (
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// ledger accounts for the sends a node makes toward one peer while it
// floods it: where each one ended. The node must make no calls to that
// peer meanwhile (they would share the pool's counters).
type ledger struct {
	n    *remote.Node
	peer string
	st0  remote.Stats
	ps0  uint64
	at   *node // whose ledger it is
	dl   *deadTally
}

func openLedger(a *node, peer string) *ledger {
	return &ledger{n: a.n, at: a, peer: peer, st0: a.n.Stats(), ps0: poolStats(a, peer).Messages, dl: tallyDeadLetters(a.sys)}
}

// writtenNow is what the node has handed to the kernel toward the peer
// so far (a native frame still in a link's buffer counts until the link
// drops it).
func (l *ledger) writtenNow() int64 {
	st := l.n.Stats()
	return int64(poolStats(l.at, l.peer).Messages-l.ps0) + int64(st.SendsNative-l.st0.SendsNative) - int64(st.DroppedUnsent-l.st0.DroppedUnsent)
}

// books are the sender's side of a flood, once it is over.
type books struct {
	attempted    int64 // Send calls made
	refused      int64 // refused at once: dead letters of the message itself
	pooledIn     int64 // handed to a proxy
	poolWritten  int64 // written by the proxies (whole batches)
	proxyDropped int64 // dropped by a proxy: dead letters
	nativeIn     int64 // put in a native link's buffer
	unsent       int64 // dropped from a closing link's buffer: dead letters
	written      int64 // handed to the kernel
	otherDead    int64 // dead letters of user messages of no other kind
	runtimeDead  int64 // dead letters of the runtime's own messages
}

// close reads the books once the writers have stopped and every send has
// been written or dropped.
func (l *ledger) close(t testing.TB, attempted int64) books {
	t.Helper()
	// Wait until the proxies have written or dropped everything handed to
	// them (a new pool's first write waits for the native path to be
	// delivered), and links still closing have counted their last frames.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		handed := int64(l.n.Stats().SendsPooled - l.st0.SendsPooled)
		if int64(poolStats(l.at, l.peer).Messages-l.ps0)+l.dl.of("*proxypool.Outgoing") >= handed {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling, with the deadline above
	}
	settle(t, 60*time.Second, 300*time.Millisecond, func() int64 {
		return int64(poolStats(l.at, l.peer).Messages) + l.dl.user()
	})
	st := l.n.Stats()
	b := books{
		attempted:    attempted,
		refused:      l.dl.of("*testpb.Echo"),
		pooledIn:     int64(st.SendsPooled - l.st0.SendsPooled),
		poolWritten:  int64(poolStats(l.at, l.peer).Messages - l.ps0),
		proxyDropped: l.dl.of("*proxypool.Outgoing"),
		nativeIn:     int64(st.SendsNative - l.st0.SendsNative),
		unsent:       int64(st.DroppedUnsent - l.st0.DroppedUnsent),
	}
	b.written = b.poolWritten + b.nativeIn - b.unsent
	b.otherDead = l.dl.user() - b.refused - b.proxyDropped - b.unsent
	b.runtimeDead, _ = l.dl.internals()
	return b
}

// check asserts the sender's side is exact: every send was refused and
// counted, or taken by a path and then written or dropped and counted.
func (b books) check(t testing.TB) {
	t.Helper()
	require.Equal(t, b.attempted, b.refused+b.pooledIn+b.nativeIn, "a send neither refused (and counted) nor taken by a path")
	require.Equal(t, b.pooledIn, b.poolWritten+b.proxyDropped, "a send handed to a proxy was neither written nor dropped and counted")
	require.Zero(t, b.otherDead, "dead letters that are none of the above")
}

func (b books) record(sc *scenario) {
	sc.set("attempted", b.attempted)
	sc.set("refused_counted", b.refused)
	sc.set("proxy_dropped_counted", b.proxyDropped)
	sc.set("link_dropped_counted", b.unsent)
	sc.set("pooled_in", b.pooledIn)
	sc.set("native_in", b.nativeIn)
	sc.set("written", b.written)
	sc.set("runtime_dead_letters", b.runtimeDead)
}

// minWireSize is the smallest a flood's send takes on the wire: the
// average over what the node wrote, less the few bytes by which sends
// differ (sequence numbers, sink names).
func (l *ledger) minWireSize(b books) float64 {
	return float64(l.n.Stats().BytesOut-l.st0.BytesOut)/float64(max(b.pooledIn+b.nativeIn, 1)) - 4
}

// inFlightBound is the most sends a receiver's kernel and its own
// buffers can hold: the bytes its kernel had queued, at the smallest
// wire size, plus full sink mailboxes, plus per link a batch being
// replayed and a 64 KiB read buffer.
func inFlightBound(kernelBytes int64, wireSize float64, links int64) int64 {
	return int64(float64(kernelBytes)/wireSize) + int64(floodSinks*sinkBound) + links*(batchSize+int64(64<<10/wireSize))
}

// poolStats are x's pooled-path figures toward peer (zero without a pool
// manager).
func poolStats(x *node, peer string) proxypool.Stats {
	if x.eq == nil || x.eq.Pools == nil {
		return proxypool.Stats{}
	}
	return x.eq.Pools.Stats(peer)
}
