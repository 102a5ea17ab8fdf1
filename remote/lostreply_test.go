package remote

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// A reply need not come back on the link its call went out on: the callee
// replies through its own pool to us when it has one for our incarnation
// (DESIGN.md, pooled path 5), and otherwise on the call's link or, that
// one gone, on any link of ours. So when we close one of the callee's
// links to us before reading it to the end, replies written there are
// lost, and the calls they answer, pinned to other links, would wait for
// ever (or until their ctx ends): the hole the simulator found in the
// model (make sim: seed 517568). These tests build it by construction:
// our end of the callee's pool link is held (memnet.Conn.Hold: the close
// we make there never reaches the callee, as under one-way loss), the
// callee's replies go through that pool, and its writes after our close
// are lost, as a kernel's are for a socket closed on the other side.
//
// Each test's call has a ctx of a minute and must end within the test's
// own bound, far below it; each says which rule ends it, and fails when
// that rule is taken out.

// lostNet starts a and b as fenceNet does (a linked to b natively, a
// with no pool to b: its calls go on that native link) with hb as the
// liveness, and gives b a pool of one hand-driven link to a: b's replies
// to a go through it. It returns a's end of that link.
func lostNet(t *testing.T, hb Liveness) (a, b *Node, asys *actor.System, h *handPool, in *link) {
	t.Helper()
	net := memnet.NewBuffered(1 << 20)
	cfg := Config{Network: net, Liveness: hb, PoolSize: 1}
	bsys, b, _ := startNode(t, "b", cfg)
	cfg.Seeds = []string{"b=" + b.Addr()}
	asys, a, _ = startNode(t, "a", cfg)
	require.NoError(t, a.Connect(context.Background(), "b", ""))
	h = dialHandPool(t, b, "a")
	pool, err := (*host)(b).publishPool("a", h.pl.Incarnation(), []actor.PID{{Node: "b", Incarnation: bsys.Incarnation(), ID: 1}}, poolOptions{Links: []*poolLink{h.pl}})
	require.NoError(t, err)
	h.pool = pool
	p := (*transport)(a).current("b")
	require.NotNil(t, p)
	waitFor(t, "b's pool link registered on a", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for l := range p.links {
			if !l.outbound && l.role == wire.RolePool {
				in = l
				return true
			}
		}
		return false
	})
	require.Equal(t, h.pl.l.dialID, in.dialID)
	return a, b, asys, h, in
}

// loseLink makes a close its end of b's link in uncleanly (as for
// silence), with the close held: b goes on writing on it, and what it
// writes is lost.
func loseLink(in *link) {
	in.conn.(*memnet.Conn).Hold()
	in.close(errors.New("test: closed as silent"))
}

// callAsync calls fn on b with a ctx of a minute; the error comes on the
// channel when the call ends.
func callAsync(t *testing.T, asys *actor.System, fn string) <-chan error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		_, err := asys.Call(ctx, "b", fn, &testpb.Echo{Text: "x"})
		done <- err
	}()
	return done
}

// endsWithin waits for the call's end, at most bound.
func endsWithin(t *testing.T, done <-chan error, bound time.Duration) error {
	t.Helper()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		t.Fatalf("the call is still pending after %v (its ctx has a minute): its reply was lost on a link we closed", bound)
		return nil
	}
}

// requireMayHaveExecuted checks that err says the call may have run.
func requireMayHaveExecuted(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, actor.ErrNodeDown)
	require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err), "%v", err)
	require.Contains(t, err.Error(), "may have been lost")
}

// A call waiting when we close the callee's link: its reply may be
// written there (here, it is, after the close), so it fails at once.
// Mutation: failing only what was sent on the closed link (failVia)
// leaves it pending.
func TestACallPendingWhenWeCloseALinkOfItsCalleeFails(t *testing.T) {
	hour := Liveness{HeartbeatInterval: time.Hour} // no timer fires: the close alone decides
	a, b, asys, _, in := lostNet(t, hour)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // a failed test leaves no handler running
	running := make(chan struct{}, 1)
	require.NoError(t, b.System().Register("slow", func(_ context.Context, arg proto.Message) (proto.Message, error) {
		running <- struct{}{}
		<-release
		return arg, nil
	}))
	done := callAsync(t, asys, "slow")
	<-running
	loseLink(in)
	err := endsWithin(t, done, 10*time.Second)
	requireMayHaveExecuted(t, err)
	require.Zero(t, a.Stats().Pending)

	// Its reply is written on the lost link, and read by nobody.
	free()
	stats := (*host)(b).poolStatsFor("a")
	waitFor(t, "b wrote the reply on its pool link", func() bool { return stats.Messages.Load() == 1 })
	require.Zero(t, a.Stats().LateReplies)
}

// A call written after we closed the callee's link: the callee, which
// has not learned, writes its reply there. When it learns, it fences the
// link on its other link to us (supersede.go), and the fence fails the
// call. Mutation: ignoring fences of lost links leaves it pending (no
// timer fires here).
func TestACallWrittenAfterWeClosedALinkOfItsCalleeFailsAtItsFence(t *testing.T) {
	hour := Liveness{HeartbeatInterval: time.Hour}
	a, b, asys, h, in := lostNet(t, hour)
	require.NoError(t, b.Connect(context.Background(), "a", "")) // b's native link to a: its fences go there
	loseLink(in)
	done := callAsync(t, asys, "echo")
	stats := (*host)(b).poolStatsFor("a")
	waitFor(t, "b wrote the reply on its pool link", func() bool { return stats.Messages.Load() == 1 })
	require.Equal(t, 1, a.Stats().Pending, "nothing but the callee's fence may end the call here")

	// b learns (here by hand: as if the link fell silent for it too).
	h.halt()
	h.pl.Close(errors.New("test: silent"))
	err := endsWithin(t, done, 10*time.Second)
	requireMayHaveExecuted(t, err)
	require.Zero(t, a.Stats().Pending)
}

// The same when the callee has no other link to us to write a fence on
// (its pool link was its only one): the heartbeat window after our close
// bounds the wait, by which the callee has learned (the link fell silent
// for it) and writes its replies elsewhere. Mutation: without the window
// the call waits for its ctx.
func TestACallWrittenAfterWeClosedALinkOfItsCalleeFailsAfterTheWindow(t *testing.T) {
	hb := Liveness{HeartbeatInterval: 100 * time.Millisecond, HeartbeatMisses: 4}
	a, b, asys, _, in := lostNet(t, hb)
	closed := time.Now()
	loseLink(in)
	done := callAsync(t, asys, "echo")
	stats := (*host)(b).poolStatsFor("a")
	waitFor(t, "b wrote the reply on its pool link", func() bool { return stats.Messages.Load() == 1 })
	err := endsWithin(t, done, 10*time.Second)
	requireMayHaveExecuted(t, err)
	require.GreaterOrEqual(t, time.Since(closed), a.cfg.lostWait(), "failed before the callee could have learned")
	require.Zero(t, a.Stats().Pending)

	// A later call is answered: b writes its replies elsewhere now.
	waitFor(t, "b closed its pool link, silent", func() bool { return noPoolLink(b, "a") })
	v, err := asys.Call(context.Background(), "b", "echo", &testpb.Echo{Text: "y"})
	require.NoError(t, err)
	require.Equal(t, "echo y", v.(*testpb.Echo).Text)
}

// noPoolLink reports whether n has no live pool link with node left.
func noPoolLink(n *Node, node string) bool {
	p := (*transport)(n).current(node)
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		if l.role == wire.RolePool && !l.isClosed() {
			return false
		}
	}
	return true
}
