package proxypool

import (
	"sync"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/poolpath"
	"github.com/mailroom-go/mailroom/internal/testpb"
	"github.com/stretchr/testify/require"
)

// writeCounter counts the frames each pool link writes, by worker.
type writeCounter struct {
	mu     sync.Mutex
	writes map[int]int
}

func (w *writeCounter) hook(l poolpath.Link) {
	worker := l.Worker()
	l.SetHold(func() {
		w.mu.Lock()
		w.writes[worker]++
		w.mu.Unlock()
	})
}

func (w *writeCounter) take() map[int]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	got := w.writes
	w.writes = map[int]int{}
	return got
}

// TestRootCallsSpreadOverEveryProxy: calls and requests made through the
// System's own methods (the root handle, as a plain goroutine or an HTTP
// handler makes them) need no order between them and take every proxy;
// sends through the root handle stay on one proxy, in order.
func TestRootCallsSpreadOverEveryProxy(t *testing.T) {
	b := startNode(t, "b", nodeOpts{poolSize: 2})
	sink := &orderSink{}
	_, err := b.sys.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return sink }), "order")
	require.NoError(t, err)
	a := startNode(t, "a", nodeOpts{poolSize: 2, cfg: Config{ManualConnect: true}, seeds: []string{"b=" + b.n.Addr()}})
	wc := &writeCounter{writes: map[int]int{}}
	a.pool.onLink = wc.hook
	require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
	require.Equal(t, 2, waitStatus(t, a.pool, "b", Connected).Proxies)

	// One at a time, so that each is a frame of its own.
	for i := range 8 {
		v, err := a.sys.Call(ctxT(t), "b", "echo", &testpb.Echo{Text: "call", N: int64(i)})
		require.NoError(t, err)
		require.Equal(t, int64(i+1), v.(*testpb.Echo).N)
		r, err := a.sys.RequestNamed(ctxT(t), "b", "echo", &testpb.Echo{Text: "req"})
		require.NoError(t, err)
		require.Equal(t, "actor req", r.(*testpb.Echo).Text)
	}
	calls := wc.take()
	require.Len(t, calls, 2, "root calls and requests used both proxies: %v", calls)
	for w, n := range calls {
		require.GreaterOrEqual(t, n, 4, "proxy %d took its share of the 16: %v", w, calls)
	}

	const sends = 2000
	for i := range int64(sends) {
		a.sys.SendNamed("b", "order", &testpb.Echo{N: i})
	}
	eventually(t, "every send delivered", func() bool { return len(sink.snapshot()) == sends })
	for i, v := range sink.snapshot() {
		require.Equal(t, int64(i), v, "root sends keep their order")
	}
	require.Len(t, wc.take(), 1, "root sends are one sender: one proxy")
}
