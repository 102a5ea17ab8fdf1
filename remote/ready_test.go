package remote_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

type waited struct {
	info remote.PeerInfo
	err  error
}

func waitPeerAsync(ctx context.Context, n *remote.Node, node string) <-chan waited {
	ch := make(chan waited, 1)
	go func() {
		info, err := n.WaitPeer(ctx, node)
		ch <- waited{info, err}
	}()
	return ch
}

// TestWaitPeerWakesOnTheLink: a waiter blocked before the link exists
// returns once it comes up, with the incarnation reached; a later waiter
// returns at once; both sides see the link.
func TestWaitPeerWakesOnTheLink(t *testing.T) {
	bSys, bn := testnode.Local(t, testnode.Options{Name: "b"})
	_, an := testnode.Local(t, testnode.Options{Name: "a"})
	res := waitPeerAsync(ctxT(t, 20*time.Second), an, "b")
	select {
	case r := <-res:
		t.Fatalf("WaitPeer returned before any link: %+v", r)
	default:
	}
	require.NoError(t, an.Connect(ctxT(t, 10*time.Second), "b", bn.Addr()))
	r := <-res
	require.NoError(t, r.err)
	require.Equal(t, "b", r.info.Node)
	require.Equal(t, bSys.Incarnation(), r.info.Incarnation)

	info, err := an.WaitPeer(ctxT(t, 5*time.Second), "b")
	require.NoError(t, err)
	require.Equal(t, bSys.Incarnation(), info.Incarnation)
	info, err = bn.WaitPeer(ctxT(t, 5*time.Second), "a")
	require.NoError(t, err, "the accepting side has the link too")
	require.Equal(t, "a", info.Node)
}

// TestWaitPeerGivesUpWithItsCtx: no link ever comes: the error says what
// never came and wraps ctx's error; a stopped peer is not waited for.
func TestWaitPeerGivesUpWithItsCtx(t *testing.T) {
	bSys, bn := testnode.Local(t, testnode.Options{Name: "b"})
	_, an := testnode.Local(t, testnode.Options{Name: "a"})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := an.WaitPeer(ctx, "nobody")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "waiting for a link to node nobody")

	require.NoError(t, an.Connect(ctxT(t, 10*time.Second), "b", bn.Addr()))
	_, err = an.WaitPeer(ctxT(t, 5*time.Second), "b")
	require.NoError(t, err)
	stop, cancelStop := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelStop()
	require.NoError(t, bSys.Stop(stop))
	eventually(t, "b's incarnation gone on a", func() bool { _, ok := an.Peer("b"); return !ok })
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	_, err = an.WaitPeer(ctx2, "b")
	require.ErrorIs(t, err, context.DeadlineExceeded, "no link to a stopped node")

	_, err = an.WaitPeer(ctxT(t, time.Second), "a")
	require.ErrorContains(t, err, "that is this node")
}

// TestWaitPeerSeesARestart: after a peer is killed and its link closed,
// WaitPeer returns the next incarnation once it links.
func TestWaitPeerSeesARestart(t *testing.T) {
	b := testnode.Start(t, testnode.Options{Name: "b"})
	_, an := testnode.Local(t, testnode.Options{Name: "a", Seeds: []string{b.Seed()}})
	require.NoError(t, an.Connect(ctxT(t, 10*time.Second), "b", ""))
	first, err := an.WaitPeer(ctxT(t, 5*time.Second), "b")
	require.NoError(t, err)
	require.Equal(t, b.Incarnation, first.Incarnation)
	b.Kill()
	<-b.Exited()
	eventually(t, "a saw the link to the killed b close", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err = an.WaitPeer(ctx, "b")
		return err != nil
	})
	require.ErrorIs(t, err, context.DeadlineExceeded, "no link to a killed node")
	require.ErrorContains(t, err, "(last dial: mailroom: node unreachable: dial b at "+b.Addr, "the error says why")

	res := waitPeerAsync(ctxT(t, 30*time.Second), an, "b")
	b2 := testnode.Start(t, testnode.Options{Name: "b"})
	// Connect pins the new address; it may report the failure of a dial
	// to the old one already in flight (the seed keeper's), and the keeper
	// then links to the new address: WaitPeer's result is what counts.
	_ = an.Connect(ctxT(t, 10*time.Second), "b", b2.Addr)
	r := <-res
	require.NoError(t, r.err)
	require.Equal(t, b2.Incarnation, r.info.Incarnation)
	require.NotEqual(t, first.Incarnation, r.info.Incarnation)
}

// TestWaitPeerDialsASeed: a node listed by discovery (here a static
// seed) is dialled by WaitPeer itself.
func TestWaitPeerDialsASeed(t *testing.T) {
	b := testnode.Start(t, testnode.Options{Name: "b"})
	_, an := testnode.Local(t, testnode.Options{Name: "a", Seeds: []string{b.Seed()}})
	info, err := an.WaitPeer(ctxT(t, 10*time.Second), "b")
	require.NoError(t, err)
	require.Equal(t, b.Incarnation, info.Incarnation)
}

// TestWaitPeerEndsWhenTheNodeStops: a waiter is released with
// actor.ErrStopped when its own node stops.
func TestWaitPeerEndsWhenTheNodeStops(t *testing.T) {
	sys, err := actor.Start(actor.Config{Name: "a", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	n, err := remote.Start(context.Background(), sys, testnode.RemoteConfig(testnode.Options{Name: "a", Cookie: testnode.DefaultCookie}))
	require.NoError(t, err)
	res := waitPeerAsync(ctxT(t, 30*time.Second), n, "b")
	stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, sys.Stop(stop))
	r := <-res
	require.True(t, errors.Is(r.err, actor.ErrStopped), "%v", r.err)
	_, err = n.WaitPeer(ctxT(t, 5*time.Second), "b")
	require.ErrorIs(t, err, actor.ErrStopped, "a stopped node answers at once")
}
