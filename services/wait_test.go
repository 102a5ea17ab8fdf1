package services

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

type waitedProvider struct {
	p   ProviderInfo
	err error
}

func waitProviderAsync(ctx context.Context, s *Services, service string, want Constraint) <-chan waitedProvider {
	ch := make(chan waitedProvider, 1)
	go func() {
		p, err := s.WaitProvider(ctx, service, want)
		ch <- waitedProvider{p, err}
	}()
	return ch
}

func stockService(v string) Service {
	return Service{Name: "stock", Version: MustVersion(v), Functions: []Function{{Name: "reserve", Handler: func(context.Context, proto.Message) (proto.Message, error) {
		return &testpb.Echo{}, nil
	}}}}
}

// TestWaitProviderWakesOnTheAnnouncement: a waiter blocked before any
// provider exists returns once one that want allows is announced; one
// of another major does not wake it for good.
func TestWaitProviderWakesOnTheAnnouncement(t *testing.T) {
	c := newClient(t, "api", Config{})
	_, pn := testnode.Local(t, testnode.Options{Name: "stock"})
	ps, err := Start(ctxT(t, 10*time.Second), pn, Config{})
	require.NoError(t, err)
	require.NoError(t, c.node.Connect(ctxT(t, 10*time.Second), "stock", pn.Addr()))

	res := waitProviderAsync(ctxT(t, 20*time.Second), c.svc, "stock", AtLeast("2.1.0"))
	require.NoError(t, ps.Provide(ctxT(t, 10*time.Second), stockService("1.4.0")))
	c.waitProvider(t, "stock", "stock", pn.System().Incarnation())
	select {
	case r := <-res:
		t.Fatalf("a 1.x provider satisfied ^2.1.0: %+v", r)
	default:
	}
	require.NoError(t, ps.Provide(ctxT(t, 10*time.Second), stockService("2.3.0")))
	r := <-res
	require.NoError(t, r.err)
	require.Equal(t, "stock", r.p.Node)
	require.Equal(t, MustVersion("2.3.0"), r.p.Version)
	require.Equal(t, pn.System().Incarnation(), r.p.Incarnation)
	require.False(t, r.p.Draining)

	p, err := c.svc.WaitProvider(ctxT(t, 5*time.Second), "stock", Major(1))
	require.NoError(t, err, "a known provider: at once")
	require.Equal(t, MustVersion("1.4.0"), p.Version)
}

// TestWaitProviderGivesUpWithItsCtx: the error says what was waited for,
// what was known instead, and wraps ctx's error; a draining provider
// does not count.
func TestWaitProviderGivesUpWithItsCtx(t *testing.T) {
	c := newClient(t, "api", Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.svc.WaitProvider(ctx, "stock", Major(1))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "waiting for a provider of stock ^1.0.0, not draining: none came (none known)")

	require.NoError(t, c.svc.Provide(ctxT(t, 10*time.Second), stockService("1.0.0")))
	p, err := c.svc.WaitProvider(ctxT(t, 5*time.Second), "stock", Major(1))
	require.NoError(t, err)
	require.True(t, p.Local)
	c.svc.reg.drainLocal(c.sys.Name())
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	_, err = c.svc.WaitProvider(ctx2, "stock", Major(1))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "known: 1.0.0 on api")
	require.ErrorContains(t, err, "draining")
}

// TestWaitProviderEndsWhenTheNodeStops: a waiter is released with
// actor.ErrStopped when its node stops.
func TestWaitProviderEndsWhenTheNodeStops(t *testing.T) {
	sys, err := actor.Start(actor.Config{Name: "api", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	rc := testnode.RemoteConfig(testnode.Options{Name: "api", Cookie: testnode.DefaultCookie})
	n, err := remote.Start(ctxT(t, 10*time.Second), sys, rc)
	require.NoError(t, err)
	s, err := Start(ctxT(t, 10*time.Second), n, Config{})
	require.NoError(t, err)
	res := waitProviderAsync(ctxT(t, 30*time.Second), s, "stock", Major(1))
	stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, sys.Stop(stop))
	r := <-res
	require.ErrorIs(t, r.err, actor.ErrStopped)
	_, err = s.WaitProvider(ctxT(t, 5*time.Second), "stock", Major(1))
	require.ErrorIs(t, err, actor.ErrStopped)
}
