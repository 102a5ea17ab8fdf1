package proxypool

import (
	"context"
	"sync"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/poolpath"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/services"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
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

// TestServicesCallsSpreadOverEveryProxy: services.Call without Via is
// made through the System's root handle, so calls from an HTTP handler's
// goroutines take every proxy too (issue 16, item 5).
func TestServicesCallsSpreadOverEveryProxy(t *testing.T) {
	b := startNode(t, "b", nodeOpts{poolSize: 2})
	bsvc, err := services.Start(ctxT(t), b.n, services.Config{})
	require.NoError(t, err)
	require.NoError(t, bsvc.Provide(ctxT(t), services.Service{
		Name: "echoes", Version: services.MustVersion("1.0.0"),
		Functions: []services.Function{{Name: "echo", Handler: func(_ context.Context, arg proto.Message) (proto.Message, error) {
			return arg, nil
		}}},
	}))
	a := startNode(t, "a", nodeOpts{poolSize: 2, cfg: Config{ManualConnect: true}, seeds: []string{"b=" + b.n.Addr()}})
	asvc, err := services.Start(ctxT(t), a.n, services.Config{})
	require.NoError(t, err)
	wc := &writeCounter{writes: map[int]int{}}
	a.pool.onLink = wc.hook
	require.NoError(t, a.pool.StartConnection(ctxT(t), "b"))
	require.Equal(t, 2, waitStatus(t, a.pool, "b", Connected).Proxies)
	eventually(t, "a knows b provides echoes", func() bool { return len(asvc.Providers("echoes")) == 1 })
	wc.take()

	for i := range 16 { // one at a time: each a frame of its own
		v, err := asvc.Call(ctxT(t), "echoes", services.Major(1), "echo", &testpb.Echo{N: int64(i)})
		require.NoError(t, err)
		require.Equal(t, int64(i), v.(*testpb.Echo).N)
	}
	calls := wc.take()
	require.Len(t, calls, 2, "services calls used both proxies: %v", calls)
}
