package proxypool

import (
	"sync"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// gatedSink records the Echo.N it handles once its gate opens.
type gatedSink struct {
	gate chan struct{}
	mu   sync.Mutex
	got  []int64
}

func (s *gatedSink) Receive(c *actor.Context) {
	if e, ok := c.Message().(*testpb.Echo); ok {
		<-s.gate
		s.mu.Lock()
		s.got = append(s.got, e.N)
		s.mu.Unlock()
	}
}

func (s *gatedSink) snapshot() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.got...)
}

// TestOrderHoldsWhenAPoolTakesOverFromTheNativePath: a sender's first
// messages go on the native link (no pool yet) and sit in the peer's
// native reader, blocked on a full mailbox; then the pool is published
// and its next messages go through a proxy. The pool must not deliver
// ahead of what the native path still holds: per-sender order. Found by
// the chaos suite: after a partition healed, traffic went native until
// the pool was rebuilt, and thousands of messages per run were delivered
// behind later ones.
func TestOrderHoldsWhenAPoolTakesOverFromTheNativePath(t *testing.T) {
	b := startNode(t, "b", nodeOpts{poolSize: 1})
	sink := &gatedSink{gate: make(chan struct{})}
	var once sync.Once
	open := func() { once.Do(func() { close(sink.gate) }) }
	t.Cleanup(open)
	pid, err := b.sys.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return sink }).WithMailbox(2, actor.Block), "gated")
	require.NoError(t, err)
	a := startNode(t, "a", nodeOpts{poolSize: 1, cfg: Config{ManualConnect: true}, seeds: []string{"b=" + b.n.Addr()}})
	require.NoError(t, a.n.Connect(ctxT(t), "b", ""))

	caller := a.sys.NewSender()
	const native, pooled = 50, 50
	for i := range int64(native) {
		caller.Send(pid, &testpb.Echo{N: i}) // no pool: the native link
	}
	// b's native reader is blocked delivering into the full mailbox.
	eventually(t, "the native reader blocked", func() bool { return b.n.Stats().Received == 3 }) // two taken, one waiting for room
	require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
	waitStatus(t, a.pool, "b", Connected)
	for i := range int64(pooled) {
		caller.Send(pid, &testpb.Echo{N: native + i}) // the pool
	}
	open()
	eventually(t, "every message delivered", func() bool { return len(sink.snapshot()) == native+pooled })
	got := sink.snapshot()
	for i, v := range got {
		require.Equal(t, int64(i), v, "per-sender order: %v", got)
	}
}
