package remote

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// (fix) A pooled call whose push waits for room when its pool is torn
// down is settled by the teardown (actor.ErrNotSent, not executed) or
// sent natively, never both. Before, the caller took the call back
// without looking whether the teardown had already settled it, and sent
// it natively: b ran the call its caller had been told never ran.
func TestAPooledCallSettledByATeardownIsNotResentNatively(t *testing.T) {
	_, asys, a, b, sink := fenceNet(t)
	var ran atomic.Int64
	require.NoError(t, b.System().Register("count", func(_ context.Context, arg proto.Message) (proto.Message, error) {
		ran.Add(1)
		return arg, nil
	}))

	// A pool of one link whose owner does not drain it, and whose queue
	// holds one message: a send fills it, and the call's push waits.
	h := dialHandPool(t, a, "b")
	h.halt()
	pool, err := (*host)(a).publishPool("b", h.pl.Incarnation(), []actor.PID{{Node: "a", Incarnation: asys.Incarnation(), ID: 1}},
		poolOptions{Links: []*poolLink{h.pl}, QueueEntries: 1})
	require.NoError(t, err)
	h.pool = pool
	asys.NewSender().SendNamed("b", "order", &testpb.Echo{N: 1})

	refused, release := make(chan struct{}), make(chan struct{})
	a.afterPoolRefused = func() {
		close(refused)
		<-release
	}
	ctx, cancel := context.WithCancel(context.Background()) // a ctx that can end: the proxy writes
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := asys.Call(ctx, "b", "count", &testpb.Echo{N: 2})
		done <- err
	}()
	waitFor(t, "the call is pending on b", func() bool { return a.Stats().Pending == 1 })

	// The teardown wakes the push (refused: the pool closed) and settles
	// the call; only then does the caller look at it again.
	(*host)(a).unpublishPool(pool, errors.New("test: torn down"))
	require.NoError(t, within(t, refusedErr(refused)))
	waitFor(t, "the teardown settled the call", func() bool { return a.Stats().Pending == 0 })
	close(release)
	err = <-done
	require.ErrorIs(t, err, actor.ErrNotSent)
	var ae *actor.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, actor.NotExecuted, ae.Outcome)

	// The send the pool held is written, as a torn-down proxy does (the
	// native path is fenced behind it).
	h.drain(t)
	waitFor(t, "the pooled send delivered", func() bool { return sink.has(1) })

	// b handles a link's frames in order: once a second call over the
	// native link is answered, a resent first call would have run.
	_, err = asys.Call(context.Background(), "b", "count", &testpb.Echo{N: 3})
	require.NoError(t, err)
	require.Equal(t, int64(1), ran.Load(), "the call told it was not sent ran on b")
}

// refusedErr turns a closed channel into a nil error for within.
func refusedErr(c chan struct{}) chan error {
	e := make(chan error, 1)
	go func() {
		<-c
		e <- nil
	}()
	return e
}
