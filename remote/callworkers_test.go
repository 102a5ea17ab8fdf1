package remote

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// Inbound calls run on reused workers: as many as ran at once, kept
// parked between calls, ended by two sweeps of idleness and by the
// node's stop.
func TestInboundCallsReuseWorkers(t *testing.T) {
	net := memnet.New()
	bsys, b, _ := startNode(t, "b", Config{Network: net})
	const wide = 20
	var started sync.WaitGroup
	started.Add(wide)
	release := make(chan struct{})
	require.NoError(t, bsys.Register("hold", func(ctx context.Context, _ proto.Message) (proto.Message, error) {
		started.Done()
		<-release
		return &testpb.Echo{Text: "held"}, nil
	}))
	asys, a, _ := startNode(t, "a", Config{Network: net, Seeds: []string{"b=" + b.Addr()}})
	require.NoError(t, a.Connect(context.Background(), "b", ""))

	var calls sync.WaitGroup
	for range wide {
		calls.Add(1)
		go func() {
			defer calls.Done()
			_, err := asys.Call(context.Background(), "b", "hold", &testpb.Echo{})
			require.NoError(t, err)
		}()
	}
	started.Wait() // every call runs at once: one worker each
	close(release)
	calls.Wait()
	waitFor(t, "the workers parked", func() bool { return b.workers.parked() == wide })

	require.Equal(t, uint64(wide), b.workers.started.Load(), "one worker per call running at once")
	require.GreaterOrEqual(t, b.Stats().CallWorkers, int64(wide), "counted in Stats")

	g0 := runtime.NumGoroutine()
	for range 200 {
		_, err := asys.Call(context.Background(), "b", "echo", &testpb.Echo{Text: "x"})
		require.NoError(t, err)
	}
	require.Equal(t, uint64(wide), b.workers.started.Load(), "sequential calls start no worker")
	waitFor(t, "the workers parked", func() bool { return b.workers.parked() == wide })

	b.workers.sweep() // marks the parked
	_, err := asys.Call(context.Background(), "b", "echo", &testpb.Echo{Text: "x"})
	require.NoError(t, err)
	b.workers.sweep() // ends those parked since the last sweep: all but the one just used
	waitFor(t, "one worker left", func() bool { return b.workers.parked() == 1 })
	goroutinesSettle(t, g0-wide+1+2)
}

// A caller's cancel reaches its call on a worker: the handler's context
// ends, and the worker is free for the next call.
func TestCancelReachesACallOnAWorker(t *testing.T) {
	net := memnet.New()
	bsys, b, _ := startNode(t, "b", Config{Network: net})
	running, ended := make(chan struct{}, 1), make(chan error, 1)
	require.NoError(t, bsys.Register("wait", func(ctx context.Context, _ proto.Message) (proto.Message, error) {
		running <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}))
	asys, a, _ := startNode(t, "a", Config{Network: net, Seeds: []string{"b=" + b.Addr()}})
	require.NoError(t, a.Connect(context.Background(), "b", ""))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := asys.Call(ctx, "b", "wait", &testpb.Echo{})
		errc <- err
	}()
	<-running
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	select {
	case err := <-ended:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context did not end")
	}
	waitFor(t, "the worker parked", func() bool { return b.workers.parked() == 1 })
	v, err := asys.Call(context.Background(), "b", "echo", &testpb.Echo{Text: "x"})
	require.NoError(t, err)
	require.Equal(t, "echo x", v.(*testpb.Echo).Text)
	require.Equal(t, uint64(0), b.Stats().BadMessages)
}

// A call alone in its frame runs on the goroutine that read it (the
// reader role moves to a worker), and its reply is written from there;
// a run of lone calls starts no goroutines beyond the first hand-off.
func TestALoneCallRunsOnItsReader(t *testing.T) {
	net := memnet.New()
	bsys, b, _ := startNode(t, "b", Config{Network: net})
	stacks := make(chan string, 1)
	require.NoError(t, bsys.Register("where", func(context.Context, proto.Message) (proto.Message, error) {
		buf := make([]byte, 8<<10)
		select {
		case stacks <- string(buf[:runtime.Stack(buf, false)]):
		default:
		}
		return &testpb.Echo{Text: "here"}, nil
	}))
	asys, a, _ := startNode(t, "a", Config{Network: net, Seeds: []string{"b=" + b.Addr()}})
	require.NoError(t, a.Connect(context.Background(), "b", ""))
	_, err := asys.Call(context.Background(), "b", "where", &testpb.Echo{})
	require.NoError(t, err)
	stack := <-stacks
	require.True(t, strings.Contains(stack, "remote.(*link).readLoop") || strings.Contains(stack, "remote.(*linkReader).run"),
		"the handler ran on the goroutine that read it:\n%s", stack)

	started := b.workers.started.Load()
	for range 200 {
		_, err := asys.Call(context.Background(), "b", "echo", &testpb.Echo{Text: "x"})
		require.NoError(t, err)
	}
	require.LessOrEqual(t, b.workers.started.Load(), started+2, "lone calls hand the reader role between the same few goroutines")
}

// A node's stop is bounded by its ctx even while a call it took runs on
// (here a lone call, run on the goroutine that read it): the stop gives
// up on it with an error; the call's worker ends when the handler does.
func TestStopIsNotHeldByARunningCall(t *testing.T) {
	net := memnet.New()
	bsys, err := actor.Start(actor.Config{Name: "b", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	require.NoError(t, bsys.RegisterTypes(&testpb.Echo{}))
	entered, release := make(chan struct{}), make(chan struct{})
	require.NoError(t, bsys.Register("stuck", func(context.Context, proto.Message) (proto.Message, error) {
		close(entered)
		<-release
		return &testpb.Echo{}, nil
	}))
	require.NoError(t, bsys.Register("quick", func(context.Context, proto.Message) (proto.Message, error) {
		return &testpb.Echo{}, nil
	}))
	b, err := Start(context.Background(), bsys, Config{Cookie: testCookie, Network: net})
	require.NoError(t, err)
	asys, a, _ := startNode(t, "a", Config{Network: net, Seeds: []string{"b=" + b.Addr()}})
	require.NoError(t, a.Connect(context.Background(), "b", ""))
	// The first lone call moves the reader role to a worker, which then
	// runs the stuck one.
	_, err = asys.Call(context.Background(), "b", "quick", &testpb.Echo{})
	require.NoError(t, err)
	callErr := make(chan error, 1)
	go func() {
		_, err := asys.Call(context.Background(), "b", "stuck", &testpb.Echo{})
		callErr <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- bsys.Stop(ctx) }()
	select {
	case err := <-stopped:
		require.Error(t, err, "the stop says a call was still running")
	case <-time.After(20 * time.Second):
		t.Fatal("the stop waited for the running call beyond its ctx")
	}
	close(release)
	require.Error(t, <-callErr, "its node stopped under it")
	waitFor(t, "the call's worker ended", func() bool { return b.workers.count() == 0 })
}
