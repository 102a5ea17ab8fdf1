package proxypool

// The pooled call path's cost on each side, measured apart as
// SenderPath and ReceiverPath do for sends: the other side is a child
// process, so cpu-ns/call (getrusage) and allocs/op (one op = one call)
// are this process's only. The argument is made once and reused, and the
// called function answers one shared value: what remains is the
// runtime's. BenchmarkOneCaller is the single caller's round trip.
//
//	go test -run '^$' -bench 'CallerPath|CalleePath' -benchtime 200000x -count 6 ./proxypool | tee callpath.txt
//	go test -run '^$' -bench OneCaller -benchtime 20000x -count 6 ./proxypool | tee onecaller.txt
//	benchstat callpath.txt onecaller.txt

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"google.golang.org/protobuf/proto"
)

const callers = 1000

var callPayloads = []struct {
	name string
	msg  proto.Message
}{
	{"bytes", &testpb.Blob{Data: make([]byte, 200)}},
	{"echo", &testpb.Echo{Text: "0123456789abcdef0123456789abcdef", N: 1 << 40, From: "a"}},
}

// BenchmarkCallerPath: 1,000 callers make b.N calls in all through the
// pool to the function "ack" on a child process. callers=root: plain
// goroutines calling System.Call (they spread over the proxies);
// callers=senders: each goroutine with its own Sender handle (as actors:
// one proxy each).
func BenchmarkCallerPath(b *testing.B) {
	child := testnode.Start(b, testnode.Options{Name: "b"})
	a := startNode(b, "a", nodeOpts{poolSize: 2, cfg: Config{ManualConnect: true}, seeds: []string{child.Seed()}})
	ctx := context.Background()
	if err := a.pool.StartConnection(ctx, "b"); err != nil {
		b.Fatal(err)
	}
	waitStatus(b, a.pool, "b", Connected)
	waitChildPool(b, a, "b")
	senders := make([]*actor.Sender, callers)
	for i := range senders {
		senders[i] = a.sys.NewSender()
	}
	for _, kind := range []string{"root", "senders"} {
		for _, p := range callPayloads {
			b.Run("callers="+kind+"/payload="+p.name, func(b *testing.B) {
				st0 := a.pool.Stats("b")
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuNow(b)
				var wg sync.WaitGroup
				for i := range callers {
					n := b.N / callers
					if i < b.N%callers {
						n++
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range n {
							var err error
							if kind == "root" {
								_, err = a.sys.Call(ctx, "b", "ack", p.msg)
							} else {
								_, err = senders[i].Call(ctx, "b", "ack", p.msg)
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(cpuNow(b)-cpu0)/float64(b.N), "cpu-ns/call")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
				reportBatch(b, st0, a.pool.Stats("b"))
			})
		}
	}
}

// BenchmarkCalleePath: a child process makes b.N calls in all, from 1,000
// goroutines with a Sender handle each, through its pool to the function
// "ack" here; the replies go back through this node's pool.
func BenchmarkCalleePath(b *testing.B) {
	a := startNode(b, "a", nodeOpts{poolSize: 2, cfg: Config{ManualConnect: true}})
	child := testnode.Start(b, testnode.Options{Name: "b"})
	ctx := context.Background()
	if err := a.n.Connect(ctx, "b", child.Addr); err != nil {
		b.Fatal(err)
	}
	// Our replies go through our own pool toward the child.
	if err := a.pool.StartConnection(ctx, "b"); err != nil {
		b.Fatal(err)
	}
	waitStatus(b, a.pool, "b", Connected)
	waitChildPool(b, a, "b")
	for _, p := range callPayloads {
		b.Run("payload="+p.name, func(b *testing.B) {
			st0 := a.pool.Stats("b")
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuNow(b)
			arg := &testpb.Echo{Text: "a ack " + strconv.Itoa(callers) + " " + p.name, N: int64(b.N)}
			v, err := a.sys.Call(ctx, "b", "call_blast", arg)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if e := v.(*testpb.Echo); e.N != int64(b.N) {
				b.Fatalf("%d of %d calls succeeded; the last error: %s", e.N, b.N, e.Text)
			}
			b.ReportMetric(float64(cpuNow(b)-cpu0)/float64(b.N), "cpu-ns/call")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
			reportBatch(b, st0, a.pool.Stats("b")) // the replies' batches
		})
	}
}

// reportBatch reports the messages per batch frame this node's pool
// wrote between two Stats.
func reportBatch(b *testing.B, before, after Stats) {
	if n := after.Batches - before.Batches; n > 0 {
		b.ReportMetric(float64(after.Messages-before.Messages)/float64(n), "msgs/batch")
	}
}

// BenchmarkOneCaller: one goroutine, one call of 200 bytes at a time to
// "ack" on a child process; the round trip's median (p50-µs) and this
// process's CPU per call. path=pooled: both nodes run a pool toward the
// other; path=native: a child without a pool, and none toward it;
// path=rawtcp: the floor, a 251-byte frame to the child's raw_echo and
// a 30-byte frame back on a plain TCP connection, no runtime (the bench
// harness's ping-pong). Compare paths within a run: the machine's load
// moves them all.
func BenchmarkOneCaller(b *testing.B) {
	pooled := testnode.Start(b, testnode.Options{Name: "b"})
	native := testnode.Start(b, testnode.Options{Name: "c", Extra: map[string]string{"pool": "off"}})
	a := startNode(b, "a", nodeOpts{poolSize: 2, cfg: Config{ManualConnect: true}, seeds: []string{pooled.Seed(), native.Seed()}})
	ctx := context.Background()
	if err := a.pool.StartConnection(ctx, "b"); err != nil {
		b.Fatal(err)
	}
	waitStatus(b, a.pool, "b", Connected)
	waitChildPool(b, a, "b")
	if err := a.n.Connect(ctx, "c", ""); err != nil {
		b.Fatal(err)
	}
	arg := &testpb.Blob{Data: make([]byte, 200)}
	v, err := a.sys.Call(ctx, "b", "raw_echo", &testpb.Echo{N: 26})
	if err != nil {
		b.Fatal(err)
	}
	raw, err := net.Dial("tcp", v.(*testpb.Echo).Text)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { raw.Close() })
	rawIn := bufio.NewReader(raw)
	rawCall := make([]byte, 251)
	binary.BigEndian.PutUint32(rawCall, 247)
	rawReply := make([]byte, 30)
	call := func(node string) error {
		if node == "" {
			if _, err := raw.Write(rawCall); err != nil {
				return err
			}
			_, err := io.ReadFull(rawIn, rawReply)
			return err
		}
		_, err := a.sys.Call(ctx, node, "ack", arg)
		return err
	}
	for _, path := range []struct{ name, node string }{{"pooled", "b"}, {"native", "c"}, {"rawtcp", ""}} {
		b.Run("path="+path.name, func(b *testing.B) {
			for range 1000 { // warm up
				if err := call(path.node); err != nil {
					b.Fatal(err)
				}
			}
			rtt := make([]time.Duration, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuNow(b)
			for i := range b.N {
				t0 := time.Now()
				if err := call(path.node); err != nil {
					b.Fatal(err)
				}
				rtt[i] = time.Since(t0)
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuNow(b)-cpu0)/float64(b.N), "cpu-ns/call")
			slices.Sort(rtt)
			b.ReportMetric(float64(rtt[len(rtt)/2])/1e3, "p50-µs")
		})
	}
}

// waitChildPool waits until the child node has connected its own pool
// toward a (the replies to a's calls take it).
func waitChildPool(b *testing.B, a *tnode, child string) {
	b.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := a.sys.Call(context.Background(), child, poolStatusFn, &testpb.Echo{Text: "a"})
		if err != nil {
			b.Fatal(err)
		}
		if Status(v.(*testpb.Echo).N) == Connected {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the child's pool toward a never connected")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
