package remote

// The receiving side of the pooled path in one process, without the
// network: a link's reader decoding batch frames of 1,000 sends and
// delivering them, the target actors consuming on the other core. One op
// is one message; allocs/op besides the decoded message's own are the
// runtime's.
//
//	go test -run '^$' -bench Dispatch -benchtime 2000000x -count 6 ./remote | tee dispatch.txt
//	benchstat dispatch.txt

import (
	"context"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"google.golang.org/protobuf/proto"
)

const dispatchBatch = 1000

func BenchmarkDispatch(b *testing.B) {
	sys, err := actor.Start(actor.Config{Name: "b", Logger: actor.DiscardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	if err := sys.RegisterTypes(&testpb.Echo{}, &testpb.Blob{}); err != nil {
		b.Fatal(err)
	}
	n, err := Start(context.Background(), sys, Config{Cookie: testCookie, Network: memnet.New()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sys.Stop(ctx); err != nil {
			b.Error(err)
		}
	})
	var got atomic.Int64
	count := actor.PropsFromFunc(func(c *actor.Context) {
		if _, ok := c.Message().(proto.Message); ok {
			got.Add(1)
		}
	}).WithMailbox(8192, actor.Block)
	names := make([]string, dispatchBatch)
	for i := range names {
		names[i] = "s/" + strconv.Itoa(i)
		if _, err := sys.SpawnNamed(count, names[i]); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := sys.SpawnNamed(count, "sink"); err != nil {
		b.Fatal(err)
	}
	// The frames a peer "a" writes to this node.
	peer := wire.Ends{SelfNode: "a", SelfInc: 7, PeerNode: sys.Name(), PeerInc: sys.Incarnation()}
	payloads := []struct {
		name string
		msg  proto.Message
	}{
		{"bytes", &testpb.Blob{Data: make([]byte, 200)}},
		{"echo", &testpb.Echo{Text: string(make([]byte, 180)), N: 1 << 40, From: "a"}},
	}
	for _, targets := range []string{"one", "many"} {
		for _, p := range payloads {
			b.Run("targets="+targets+"/payload="+p.name, func(b *testing.B) {
				body := wire.AppendUvarint(nil, dispatchBatch)
				for i := range dispatchBatch {
					name := "sink"
					if targets == "many" {
						name = names[i]
					}
					el := wire.Element{Kind: wire.KindSend, ToName: name, Sender: actor.PID{Node: "a", Incarnation: 7, ID: uint64(100 + i)},
						Type: string(p.msg.ProtoReflect().Descriptor().FullName()), Msg: p.msg}
					if body, err = peer.EncodeElement(body, &el); err != nil {
						b.Fatal(err)
					}
				}
				l := newLink(n, nil, wire.RolePool, false, wire.Ends{SelfNode: sys.Name(), SelfInc: sys.Incarnation(), PeerNode: "a", PeerInc: 7, In: new(wire.Interner)}, nil)
				defer l.cancel()
				frames := (b.N + dispatchBatch - 1) / dispatchBatch
				base := got.Load()
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime(b)
				for range frames {
					if err := l.dispatch(wire.KindBatch, body); err != nil {
						b.Fatal(err)
					}
				}
				for got.Load() < base+int64(frames*dispatchBatch) {
					time.Sleep(100 * time.Microsecond)
				}
				b.StopTimer()
				b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(frames*dispatchBatch), "cpu-ns/msg")
			})
		}
	}
}

// cpuTime is this process's user+system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBatchDecode: a link's reader walking a batch frame of 1,000
// sends to one target, decoding each entry (names interned), without the
// payloads' protobuf decoding nor the delivery. One op is one entry.
func BenchmarkBatchDecode(b *testing.B) {
	peer := wire.Ends{SelfNode: "a", SelfInc: 7, PeerNode: "b", PeerInc: 9}
	body := wire.AppendUvarint(nil, dispatchBatch)
	var err error
	for i := range dispatchBatch {
		el := wire.Element{Kind: wire.KindSend, ToName: "sink", Sender: actor.PID{Node: "a", Incarnation: 7, ID: uint64(100 + i)},
			Type: "mailroom.testpb.Echo", Payload: make([]byte, 200)}
		if body, err = peer.EncodeElement(body, &el); err != nil {
			b.Fatal(err)
		}
	}
	e := wire.Ends{SelfNode: "b", SelfInc: 9, PeerNode: "a", PeerInc: 7, In: new(wire.Interner)}
	b.ReportAllocs()
	var el wire.Element
	for i := 0; i < b.N; i += dispatchBatch {
		it, err := e.NewBatchIter(body)
		if err != nil {
			b.Fatal(err)
		}
		for {
			ok, err := it.Next(&el)
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
		}
	}
}
