package proxypool

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"
)

// Tracing across two in-process nodes, each with the SDK and an
// in-memory exporter: the spans mailroom makes on both sides, their
// parents, and the spans handlers start from the context they are given,
// over the pooled path and the native one (the callee's receiver pool
// disabled), on the in-memory network and TCP.

// tracedNode is a test node whose TracerProvider exports to exp.
type tracedNode struct {
	*tnode
	tp  *sdktrace.TracerProvider
	exp *tracetest.InMemoryExporter
}

func newTraced() (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), exp
}

// tracedPair starts b (a receiver pool of bPool workers) and a, both
// traced when traced is set, links a to b and waits for a's path to b:
// a pool, or none when b has none.
func tracedPair(t *testing.T, net remote.Network, bPool int, traced bool) (a, b *tracedNode) {
	t.Helper()
	mk := func(name string, o nodeOpts) *tracedNode {
		tn := &tracedNode{}
		tn.tp, tn.exp = newTraced()
		if traced {
			o.tp = tn.tp
		}
		tn.tnode = startNode(t, name, o)
		return tn
	}
	b = mk("b", nodeOpts{net: net, poolSize: bPool})
	a = mk("a", nodeOpts{net: net, poolSize: 2, seeds: []string{"b=" + b.n.Addr()}})
	require.NoError(t, a.n.Connect(ctxT(t), "b", ""))
	if bPool > 0 {
		waitStatus(t, a.pool, "b", Connected)
	}
	installTracedHandlers(t, b)
	return a, b
}

// installTracedHandlers registers on b a function "traced" (call and
// cast) and an actor "traced" (request and send); each starts a span
// "handler.<what it handled>" from the context it is given, and the
// function answers with that context's span context as the caller saw
// it: "<trace id> <span id> <remote>".
func installTracedHandlers(t *testing.T, b *tracedNode) {
	t.Helper()
	tr := b.tp.Tracer("test")
	seen := func(ctx context.Context) string {
		sc := trace.SpanContextFromContext(ctx)
		return fmt.Sprintf("%s %s %v", sc.TraceID(), sc.SpanID(), sc.IsRemote())
	}
	require.NoError(t, b.sys.Register("traced", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		in := arg.(*testpb.Echo)
		out := &testpb.Echo{Text: seen(ctx)}
		_, sp := tr.Start(ctx, "handler."+in.Text)
		sp.End()
		if in.N == 1 {
			return nil, errors.New("refused")
		}
		return out, nil
	}))
	_, err := b.sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if in, ok := c.Message().(*testpb.Echo); ok {
			out := &testpb.Echo{Text: seen(c.Context())}
			_, sp := tr.Start(c.Context(), "handler."+in.Text)
			sp.End()
			c.Respond(out)
		}
	}), "traced")
	require.NoError(t, err)
}

// span waits for the span named name in exp.
func span(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	var got tracetest.SpanStub
	eventually(t, "span "+name, func() bool {
		for _, s := range exp.GetSpans() {
			if s.Name == name {
				got = s
				return true
			}
		}
		return false
	})
	return got
}

// checkHop checks one traced operation: a client-side span on a whose
// parent is root, a server-side span on b whose parent is it, and the
// handler's span under the server span, all in root's trace.
func checkHop(t *testing.T, a, b *tracedNode, root trace.SpanContext, name, handler string, out, in trace.SpanKind) {
	t.Helper()
	client := span(t, a.exp, name)
	require.Equal(t, out, client.SpanKind, name)
	require.Equal(t, root.TraceID(), client.SpanContext.TraceID())
	require.Equal(t, root.SpanID(), client.Parent.SpanID())
	require.Equal(t, "b", attr(client, "mailroom.peer"))

	server := span(t, b.exp, name)
	require.Equal(t, in, server.SpanKind, name)
	require.Equal(t, root.TraceID(), server.SpanContext.TraceID())
	require.Equal(t, client.SpanContext.SpanID(), server.Parent.SpanID(), "the server span's parent is the client span")
	require.True(t, server.Parent.IsRemote())
	require.Equal(t, "a", attr(server, "mailroom.peer"))

	h := span(t, b.exp, handler)
	require.Equal(t, root.TraceID(), h.SpanContext.TraceID())
	require.Equal(t, server.SpanContext.SpanID(), h.Parent.SpanID(), "the handler's span is a child of the server span")
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// paths are the two ways a's traffic reaches b.
var paths = []struct {
	name  string
	bPool int
}{
	{"pooled", 2},
	{"native", remote.PoolDisabled},
}

func eachPath(t *testing.T, body func(t *testing.T, net remote.Network, bPool int)) {
	eachNetwork(t, func(t *testing.T, net remote.Network) {
		for _, p := range paths {
			t.Run(p.name, func(t *testing.T) { body(t, net, p.bPool) })
		}
	})
}

func TestTracingCallRequestSendCast(t *testing.T) {
	eachPath(t, func(t *testing.T, net remote.Network, bPool int) {
		a, b := tracedPair(t, net, bPool, true)
		ctx, root := a.tp.Tracer("test").Start(ctxT(t), "root")
		rc := root.SpanContext()

		_, err := a.sys.Call(ctx, "b", "traced", &testpb.Echo{Text: "call"})
		require.NoError(t, err)
		checkHop(t, a, b, rc, "mailroom.call traced", "handler.call", trace.SpanKindClient, trace.SpanKindServer)

		_, err = a.sys.RequestNamed(ctx, "b", "traced", &testpb.Echo{Text: "request"})
		require.NoError(t, err)
		checkHop(t, a, b, rc, "mailroom.request traced", "handler.request", trace.SpanKindClient, trace.SpanKindServer)

		pid, ok := b.sys.Lookup("traced")
		require.True(t, ok)
		a.sys.SendContext(ctx, pid, &testpb.Echo{Text: "send"})
		checkHop(t, a, b, rc, "mailroom.send mailroom.testpb.Echo", "handler.send", trace.SpanKindProducer, trace.SpanKindConsumer)

		a.sys.NewSender().CastContext(ctx, "b", "traced", &testpb.Echo{Text: "cast"})
		checkHop(t, a, b, rc, "mailroom.cast traced", "handler.cast", trace.SpanKindProducer, trace.SpanKindConsumer)
		root.End()

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

// TestTracingFromAHandlerContinues: what an actor sends and calls while
// it handles a traced message continues that message's trace, with no
// ctx of its own.
func TestTracingFromAHandlerContinues(t *testing.T) {
	eachPath(t, func(t *testing.T, net remote.Network, bPool int) {
		a, b := tracedPair(t, net, bPool, true)
		// A relay on a: a traced Request makes it Call b with a bare ctx.
		relay, err := a.sys.SpawnFunc(func(c *actor.Context) {
			if _, ok := c.Message().(*testpb.Echo); ok {
				_, err := c.Call(context.Background(), "b", "traced", &testpb.Echo{Text: "relayed"})
				c.Respond(&testpb.Echo{Text: fmt.Sprint(err)})
			}
		})
		require.NoError(t, err)
		ctx, root := a.tp.Tracer("test").Start(ctxT(t), "root")
		_, err = a.sys.Request(ctx, relay, &testpb.Echo{})
		require.NoError(t, err)
		root.End()
		client := span(t, a.exp, "mailroom.call traced")
		require.Equal(t, root.SpanContext().TraceID(), client.SpanContext.TraceID())
		require.Equal(t, root.SpanContext().SpanID(), client.Parent.SpanID(), "a local request hands its ctx to the actor")
		h := span(t, b.exp, "handler.relayed")
		require.Equal(t, root.SpanContext().TraceID(), h.SpanContext.TraceID())
	})
}

// TestTracingFailuresCarryTheOutcome: a client span of a failed call
// has status Error and the failure's outcome; so has the server span of
// a rejected one.
func TestTracingFailuresCarryTheOutcome(t *testing.T) {
	eachPath(t, func(t *testing.T, net remote.Network, bPool int) {
		a, b := tracedPair(t, net, bPool, true)
		ctx, root := a.tp.Tracer("test").Start(ctxT(t), "root")
		defer root.End()

		// A PID of an incarnation of b that is gone: not executed.
		stale := actor.PID{Node: "b", Incarnation: b.sys.Incarnation() + 1, ID: 1}
		_, err := a.sys.Request(ctx, stale, &testpb.Echo{Text: "stale"})
		require.ErrorIs(t, err, actor.ErrNoProcess)
		s := span(t, a.exp, "mailroom.request mailroom.testpb.Echo")
		require.Equal(t, codes.Error, s.Status.Code)
		require.Equal(t, actor.NotExecuted.Label(), attr(s, "mailroom.outcome"))

		// A rejection: executed, on both sides.
		_, err = a.sys.Call(ctx, "b", "traced", &testpb.Echo{Text: "rejected", N: 1})
		require.Error(t, err)
		for _, exp := range []*tracetest.InMemoryExporter{a.exp, b.exp} {
			s := span(t, exp, "mailroom.call traced")
			require.Equal(t, codes.Error, s.Status.Code)
			require.Equal(t, actor.Executed.Label(), attr(s, "mailroom.outcome"))
		}
	})
}

// TestNoTracerStillCarriesTheTrace: nodes without a TracerProvider make
// no span, and still carry the caller's span context: the handler's
// context holds it, remote, so spans the handler makes with a provider
// of its own continue the trace.
func TestNoTracerStillCarriesTheTrace(t *testing.T) {
	eachPath(t, func(t *testing.T, net remote.Network, bPool int) {
		a, b := tracedPair(t, net, bPool, false)
		ctx, root := a.tp.Tracer("test").Start(ctxT(t), "root")
		rc := root.SpanContext()
		want := fmt.Sprintf("%s %s true", rc.TraceID(), rc.SpanID())

		v, err := a.sys.Call(ctx, "b", "traced", &testpb.Echo{Text: "call"})
		require.NoError(t, err)
		require.Equal(t, want, v.(*testpb.Echo).Text)
		r, err := a.sys.RequestNamed(ctx, "b", "traced", &testpb.Echo{Text: "request"})
		require.NoError(t, err)
		require.Equal(t, want, r.(*testpb.Echo).Text)
		h := span(t, b.exp, "handler.call")
		require.Equal(t, rc.SpanID(), h.Parent.SpanID())
		root.End()

		// Untraced traffic carries nothing.
		v, err = a.sys.Call(ctxT(t), "b", "traced", &testpb.Echo{Text: "plain"})
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("%s %s false", trace.TraceID{}, trace.SpanID{}), v.(*testpb.Echo).Text)

		// mailroom made no span: a's exporter has the root alone, b's the
		// handlers' own.
		span(t, a.exp, "root")
		require.Len(t, a.exp.GetSpans(), 1)
		for _, s := range b.exp.GetSpans() {
			require.Contains(t, []string{"handler.call", "handler.request", "handler.plain"}, s.Name)
		}
	})
}

// TestTracedNodesMakeNoSpanForUntracedTraffic: a provider alone starts
// nothing; mailroom only continues traces.
func TestTracedNodesMakeNoSpanForUntracedTraffic(t *testing.T) {
	a, b := tracedPair(t, nil, 2, true)
	_, err := a.sys.Call(ctxT(t), "b", "traced", &testpb.Echo{Text: "plain"})
	require.NoError(t, err)
	span(t, b.exp, "handler.plain")
	require.Empty(t, a.exp.GetSpans())
	require.Len(t, b.exp.GetSpans(), 1)
	require.False(t, span(t, b.exp, "handler.plain").Parent.IsValid())
}
