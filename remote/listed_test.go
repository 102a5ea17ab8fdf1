package remote

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// Discovery may list two incarnations of one node at once: one that
// crashed (Consul keeps its check passing until the TTL runs out) and its
// successor, in any order (one answer's members sorted by ID). When the
// one whose address we hold goes down, the other's address is the one to
// dial; forgetting the address left the node unreachable until its next
// Up, which a node that changes nothing never sends.
func TestDownOfOneListedIncarnationKeepsTheOthersAddress(t *testing.T) {
	_, _, b, crashed := listedBesideACrashedOne(t) // crashed listed after: its address is held
	b.onMember(discovery.Event{Type: discovery.MemberDown, Member: crashed})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := b.System().Call(ctx, "a", "echo", &testpb.Echo{Text: "hi"})
	require.NoError(t, err, "a call to the incarnation still listed")
	require.Equal(t, "echo hi", res.(*testpb.Echo).Text)
}

// (fix) A listing of another incarnation does not end a linked one: the
// link is evidence that it lives, the listing none that it died. Consul
// keeps a crashed incarnation passing until
// its TTL runs out, and a fresh answer (a watch restarted after an agent
// hiccup, a node that starts) lists it beside its successor, in ID
// order; the incarnations are random, so the later one in the answer is
// not the newer. Before, b took the crashed one for a newer incarnation
// and ended the live one it was linked to: a call to a failed, and a,
// refused as declared dead when it dialled b, stopped itself.
func TestAListingBesideALinkedIncarnationDoesNotEndIt(t *testing.T) {
	asys, a, _ := startNode(t, "a", Config{})
	_, b, _ := startNode(t, "b", Config{})
	gone := make(chan PeerInfo, 4)
	b.AddHooks(Hooks{OnPeerGone: func(p PeerInfo) { gone <- p }})
	live := discovery.Member{Node: "a", Incarnation: asys.Incarnation(), Addr: a.Addr()}
	crashed := discovery.Member{Node: "a", Incarnation: asys.Incarnation() ^ 1, Addr: "127.0.0.1:1"}
	b.onMember(discovery.Event{Type: discovery.MemberUp, Member: live})

	call := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := b.System().Call(ctx, "a", "echo", &testpb.Echo{Text: "hi"})
		require.NoError(t, err, what)
		require.Equal(t, "echo hi", res.(*testpb.Echo).Text)
	}
	call("before the stale listing")
	b.onMember(discovery.Event{Type: discovery.MemberUp, Member: crashed})
	b.onMember(discovery.Event{Type: discovery.MemberUp, Member: live}) // the same answer, or the next, lists the live one again
	b.onMember(discovery.Event{Type: discovery.MemberUp, Member: crashed})
	select {
	case p := <-gone:
		t.Fatalf("b ended incarnation %016x of a on a listing of another", p.Incarnation)
	default:
	}
	info, ok := b.Peer("a")
	require.True(t, ok)
	require.Equal(t, asys.Incarnation(), info.Incarnation, "the linked incarnation is a's")
	call("after the stale listing")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := asys.Call(ctx, "b", "echo", &testpb.Echo{Text: "back"})
	require.NoError(t, err, "a call from a to b")
	require.False(t, a.deadOnce.Load(), "a was told it was declared dead")

	// The crashed one's Down leaves the live one as it was; the live
	// one's address is still the one to dial.
	b.onMember(discovery.Event{Type: discovery.MemberDown, Member: crashed})
	call("after the crashed one's Down")
	b.mu.Lock()
	addr := b.slots["a"].addr
	b.mu.Unlock()
	require.Equal(t, a.Addr(), addr)
}

// A listing of another incarnation still ends one whose links have all
// closed (it crashed: the kernel reset them): the successor is dialled at
// once, as before. While linked, listed or not, it is kept.
func TestAListingEndsAnIncarnationWithNoLink(t *testing.T) {
	net := memnet.New()
	_, b, _ := startNode(t, "b", Config{Network: net, Liveness: Liveness{HeartbeatInterval: time.Hour}})
	gone := make(chan PeerInfo, 4)
	b.AddHooks(Hooks{OnPeerGone: func(p PeerInfo) { gone <- p }})
	conn, err := net.Dial(context.Background(), b.Addr())
	require.NoError(t, err)
	_, err = wire.ClientHandshake(conn, []byte(testCookie), wire.Hello{Node: "a", Inc: 1, Addr: "127.0.0.1:1"}, soon(), nil)
	require.NoError(t, err)
	waitFor(t, "a/1 linked", func() bool { return b.Stats().Links == 1 })

	// Linked, not listed (its hello came first), then listed: a
	// listing of a/2 keeps it either way.
	for _, inc := range []uint64{2, 1, 2} {
		b.onMember(discovery.Event{Type: discovery.MemberUp, Member: discovery.Member{Node: "a", Incarnation: inc, Addr: fmt.Sprintf("127.0.0.1:%d", inc)}})
		select {
		case p := <-gone:
			t.Fatalf("ended a/%d while linked, on a listing of a/%d", p.Incarnation, inc)
		default:
		}
	}

	conn.Close() // a/1 crashes
	waitFor(t, "a/1's link closed", func() bool { return b.Stats().Links == 0 })
	b.onMember(discovery.Event{Type: discovery.MemberUp, Member: discovery.Member{Node: "a", Incarnation: 2, Addr: "127.0.0.1:2"}})
	select {
	case p := <-gone:
		require.Equal(t, uint64(1), p.Incarnation)
	case <-time.After(30 * time.Second):
		t.Fatal("a/1, with no link left, was not ended by a/2's listing")
	}
	b.mu.Lock()
	addr := b.slots["a"].addr
	b.mu.Unlock()
	require.Equal(t, "127.0.0.1:2", addr, "the successor's address is the one to dial")
}

// (fix) A dial to a listed address that fails goes on to the other
// incarnations discovery lists for the node: Consul lists a crashed
// incarnation beside its successor until the crashed one's TTL runs out,
// and a node that learned the crashed one's address last (a node
// starting, or a view that just listed it) dialled only that and failed
// every call to the node until the crashed one's Down.
func TestADialFallsBackToTheOtherListedIncarnations(t *testing.T) {
	asys, a, b, _ := listedBesideACrashedOne(t) // crashed listed after: its address is the one to dial

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := b.System().Call(ctx, "a", "echo", &testpb.Echo{Text: "hi"})
	require.NoError(t, err, "a call while the crashed incarnation is listed last")
	require.Equal(t, "echo hi", res.(*testpb.Echo).Text)
	info, ok := b.Peer("a")
	require.True(t, ok)
	require.Equal(t, asys.Incarnation(), info.Incarnation)
	require.Equal(t, a.Addr(), info.Addr, "reached at the live incarnation's address")

	// Nothing listed answers: the error names every address tried.
	_, c, _ := startNode(t, "c", Config{})
	c.onMember(discovery.Event{Type: discovery.MemberUp, Member: discovery.Member{Node: "x", Incarnation: 7, Addr: "127.0.0.1:1"}})
	c.onMember(discovery.Event{Type: discovery.MemberUp, Member: discovery.Member{Node: "x", Incarnation: 8, Addr: "127.0.0.1:2"}})
	_, err = c.System().Call(ctx, "x", "echo", &testpb.Echo{Text: "hi"})
	require.ErrorIs(t, err, actor.ErrUnreachable)
	require.ErrorContains(t, err, "at 127.0.0.1:2")
	require.ErrorContains(t, err, "then at 127.0.0.1:1, listed for incarnation "+actor.FormatIncarnation(7))
}

// listedBesideACrashedOne starts nodes a and b and has b's discovery list
// a's live incarnation, then a crashed one of a's at a dead address, as
// Consul does until the crashed one's TTL runs out.
func listedBesideACrashedOne(t *testing.T) (asys *actor.System, a, b *Node, crashed discovery.Member) {
	t.Helper()
	asys, a, _ = startNode(t, "a", Config{})
	_, b, _ = startNode(t, "b", Config{})
	live := discovery.Member{Node: "a", Incarnation: asys.Incarnation(), Addr: a.Addr()}
	crashed = discovery.Member{Node: "a", Incarnation: asys.Incarnation() ^ 1, Addr: "127.0.0.1:1"}
	b.onMember(discovery.Event{Type: discovery.MemberUp, Member: live})
	b.onMember(discovery.Event{Type: discovery.MemberUp, Member: crashed})
	return asys, a, b, crashed
}
