package router_test

import (
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/router"
)

// BenchmarkSendDirect and BenchmarkSendRouted*: a send to a local actor
// from a goroutine, straight to its PID or through a router over four
// routees; the difference is the router's cost per message.
func BenchmarkSendDirect(b *testing.B) {
	sys := newSystem(b)
	pid, err := sys.SpawnFunc(func(*actor.Context) {})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		sys.Send(pid, "m")
	}
}

func benchRouted(b *testing.B, cfg router.Config) {
	sys := newSystem(b)
	var rts []router.Routee
	for range 4 {
		pid, err := sys.SpawnFunc(func(*actor.Context) {})
		if err != nil {
			b.Fatal(err)
		}
		rts = append(rts, router.Of(pid))
	}
	g, err := router.NewGroup(sys, cfg, rts...)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close(ctxT(b, 5*time.Second))
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Send(sys, "m"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSendRoutedRoundRobin(b *testing.B) { benchRouted(b, router.Config{}) }

func BenchmarkSendRoutedConsistentHash(b *testing.B) {
	benchRouted(b, router.Config{Kind: router.ConsistentHash, Key: func(m any) string { return m.(string) }})
}
