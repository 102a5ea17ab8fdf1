package proxypool

import (
	"context"
	"sync"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// TestHeadersFromSendMiddlewareReachReceiveMiddleware is issue 24's
// acceptance for headers: a header that send middleware sets on node a
// is what receive middleware reads on node b, for a send, a request, a
// call and a cast, over the pooled path and the native one, on the
// in-memory network and TCP.
func TestHeadersFromSendMiddlewareReachReceiveMiddleware(t *testing.T) {
	eachPath(t, func(t *testing.T, net remote.Network, bPool int) {
		stamp := func(next actor.SendFunc) actor.SendFunc {
			return func(ctx context.Context, om *actor.OutMessage) (any, error) {
				return next(actor.WithHeader(ctx, "x-op", om.Op.String()), om)
			}
		}
		var mu sync.Mutex
		seen := map[string]string{} // message text -> the x-op header receive middleware read
		read := func(next actor.ReceiveFunc) actor.ReceiveFunc {
			return func(c *actor.Context) {
				if m, ok := c.Message().(*testpb.Echo); ok {
					v, _ := c.Headers().Get("x-op")
					mu.Lock()
					seen[m.Text] = v
					mu.Unlock()
				}
				next(c)
			}
		}
		b := startNode(t, "b", nodeOpts{net: net, poolSize: bPool, mw: &actor.Config{ReceiveMiddleware: []actor.ReceiveMiddleware{read}}})
		a := startNode(t, "a", nodeOpts{net: net, poolSize: 2, seeds: []string{"b=" + b.n.Addr()}, mw: &actor.Config{SendMiddleware: []actor.SendMiddleware{stamp}}})
		require.NoError(t, a.n.Connect(ctxT(t), "b", ""))
		if bPool > 0 {
			waitStatus(t, a.pool, "b", Connected)
		}
		fnSeen := make(chan string, 2)
		require.NoError(t, b.sys.Register("hdr", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
			v, _ := actor.HeadersFrom(ctx).Get("x-op")
			fnSeen <- arg.(*testpb.Echo).Text + "=" + v
			return arg, nil
		}))
		pid, err := b.sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
			if _, ok := c.Message().(*testpb.Echo); ok {
				c.Respond(c.Message())
			}
		}), "hdr")
		require.NoError(t, err)

		_, err = a.sys.RequestNamed(ctxT(t), "b", "hdr", &testpb.Echo{Text: "request"})
		require.NoError(t, err)
		a.sys.Send(pid, &testpb.Echo{Text: "send"})
		eventually(t, "the send's headers", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return seen["send"] != ""
		})
		mu.Lock()
		require.Equal(t, map[string]string{"request": "request", "send": "send"}, seen)
		mu.Unlock()

		_, err = a.sys.Call(ctxT(t), "b", "hdr", &testpb.Echo{Text: "call"})
		require.NoError(t, err)
		require.Equal(t, "call=call", <-fnSeen)
		a.sys.Cast("b", "hdr", &testpb.Echo{Text: "cast"})
		require.Equal(t, "cast=cast", <-fnSeen)

		st := a.n.Stats()
		if bPool > 0 {
			require.NotZero(t, st.CallsPooled)
			require.NotZero(t, st.SendsPooled)
		} else {
			require.Zero(t, st.CallsPooled+st.SendsPooled)
			require.NotZero(t, st.CallsNative)
			require.NotZero(t, st.SendsNative)
		}
	})
}
