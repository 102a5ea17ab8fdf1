package bridge_test

// Baselines for the bridge's benchmarks, same payload, same process, two
// nodes over loopback: mailroom's own Request and Send between mailroom
// actors, and protoactor-go's own (gRPC) remote between protoactor actors.
//
//	cd protoactor && go test -run '^$' -bench . -benchmem -count 6 ./bridge

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	mr "github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/protoactor/internal/testpb"
)

func BenchmarkBaselineMailroomRequest(b *testing.B) {
	a, r := pair(b)
	pid, err := r.Mailroom.SpawnNamed(mr.PropsFromFunc(func(c *mr.Context) {
		if _, ok := c.Message().(*testpb.Ping); ok {
			c.Respond(&testpb.Pong{})
		}
	}), "mr")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	h := a.Mailroom.NewSender()
	if _, err := h.Request(ctx, pid, payload); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	defer reportCPU(b, cpu)
	for range b.N {
		if _, err := h.Request(ctx, pid, payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineProtoactorRequest(b *testing.B) {
	quiet := func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
	s1 := actor.NewActorSystem(actor.WithLoggerFactory(quiet))
	s2 := actor.NewActorSystem(actor.WithLoggerFactory(quiet))
	r1 := remote.NewRemote(s1, remote.Configure("127.0.0.1", 0))
	r1.Start()
	r2 := remote.NewRemote(s2, remote.Configure("127.0.0.1", 0))
	r2.Start()
	defer r1.Shutdown(false)
	defer r2.Shutdown(false)
	if _, err := s2.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*testpb.Ping); ok {
			c.Respond(&testpb.Pong{})
		}
	}), "echo"); err != nil {
		b.Fatal(err)
	}
	pid := actor.NewPID(s2.Address(), "echo")
	if _, err := s1.Root.RequestFuture(pid, payload, 10*time.Second).Result(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	defer reportCPU(b, cpu)
	for range b.N {
		if _, err := s1.Root.RequestFuture(pid, payload, 10*time.Second).Result(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineMailroomSend(b *testing.B) {
	a, r := pair(b)
	n := &counter{done: make(chan struct{})}
	n.want.Store(int64(b.N))
	pid, err := r.Mailroom.SpawnNamed(mr.PropsFromFunc(func(c *mr.Context) {
		switch c.Message().(type) {
		case *testpb.Ping:
			if n.n.Add(1) == n.want.Load() {
				close(n.done)
			}
		case *testpb.Sleep:
			c.Respond(&testpb.Pong{})
		}
	}), "mr")
	if err != nil {
		b.Fatal(err)
	}
	h := a.Mailroom.NewSender()
	if _, err := h.Request(context.Background(), pid, &testpb.Sleep{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	defer reportCPU(b, cpu)
	for range b.N {
		h.Send(pid, payload)
	}
	<-n.done
}

func BenchmarkBaselineProtoactorSend(b *testing.B) {
	quiet := func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
	s1 := actor.NewActorSystem(actor.WithLoggerFactory(quiet))
	s2 := actor.NewActorSystem(actor.WithLoggerFactory(quiet))
	r1 := remote.NewRemote(s1, remote.Configure("127.0.0.1", 0))
	r1.Start()
	r2 := remote.NewRemote(s2, remote.Configure("127.0.0.1", 0))
	r2.Start()
	defer r1.Shutdown(false)
	defer r2.Shutdown(false)
	n := &counter{done: make(chan struct{})}
	n.want.Store(int64(b.N))
	if _, err := s2.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return n }), "echo"); err != nil {
		b.Fatal(err)
	}
	pid := actor.NewPID(s2.Address(), "echo")
	if _, err := s1.Root.RequestFuture(pid, payload, 10*time.Second).Result(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	defer reportCPU(b, cpu)
	for range b.N {
		s1.Root.Send(pid, payload)
	}
	<-n.done
}
