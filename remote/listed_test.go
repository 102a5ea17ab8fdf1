package remote

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// Discovery may list two incarnations of one node at once: one that
// crashed (Consul keeps its check passing until the TTL runs out) and its
// successor, in any order (one answer's members sorted by ID). When the
// one whose address we hold goes down, the other's address is the one to
// dial; forgetting the address left the node unreachable until its next
// Up, which a node that changes nothing never sends.
func TestDownOfOneListedIncarnationKeepsTheOthersAddress(t *testing.T) {
	asys, a, _ := startNode(t, "a", Config{})
	_, b, _ := startNode(t, "b", Config{})
	live := discovery.Member{Node: "a", Incarnation: asys.Incarnation(), Addr: a.Addr()}
	crashed := discovery.Member{Node: "a", Incarnation: asys.Incarnation() ^ 1, Addr: "127.0.0.1:1"}
	b.onMember(discovery.Event{Type: discovery.MemberUp, Member: live})
	b.onMember(discovery.Event{Type: discovery.MemberUp, Member: crashed}) // listed after: its address is held
	b.onMember(discovery.Event{Type: discovery.MemberDown, Member: crashed})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := b.System().Call(ctx, "a", "echo", &testpb.Echo{Text: "hi"})
	require.NoError(t, err, "a call to the incarnation still listed")
	require.Equal(t, "echo hi", res.(*testpb.Echo).Text)
}
