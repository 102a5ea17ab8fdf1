package remote

import (
	"context"
	"errors"
	"github.com/mailroom-go/mailroom/internal/wire"
	"strings"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// TestARejectionKeepsItsCodeAcrossNodes: a rejection that comes from
// another node keeps its code for actor.ErrorCode, and a handler on a
// third node that returns the rejection it received passes the code on
// (it used to arrive as "").
func TestARejectionKeepsItsCodeAcrossNodes(t *testing.T) {
	billing, bn, _ := startNode(t, "billing", Config{})
	require.NoError(t, billing.Register("charge", func(context.Context, proto.Message) (proto.Message, error) {
		return nil, actor.Reject("limit", "over the limit")
	}))
	gateway, gn, _ := startNode(t, "gateway", Config{})
	require.NoError(t, gn.Connect(context.Background(), "billing", bn.Addr()))
	require.NoError(t, gateway.Register("relay", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		return gateway.Call(ctx, "billing", "charge", arg) // returns the received rejection as is
	}))
	orders, on, _ := startNode(t, "orders", Config{})
	require.NoError(t, on.Connect(context.Background(), "billing", bn.Addr()))
	require.NoError(t, on.Connect(context.Background(), "gateway", gn.Addr()))

	_, err := orders.Call(context.Background(), "billing", "charge", &testpb.Echo{})
	var re *actor.RemoteError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "limit", re.Code)
	require.Equal(t, "limit", actor.ErrorCode(err), "the code of a rejection from another node")
	require.Equal(t, actor.Executed, actor.Outcome(err))

	_, err = orders.Call(context.Background(), "gateway", "relay", &testpb.Echo{})
	require.ErrorAs(t, err, &re)
	require.Equal(t, "gateway", re.Node)
	require.Equal(t, "limit", re.Code, "a relayed rejection keeps its code: %v", err)
	require.Equal(t, "limit", actor.ErrorCode(err))
}

// TestAReplyStatesOneOutcome: a status 3 reply whose code names a
// condition of another outcome (a hostile or confused peer) is read with
// the reply's outcome, and errors.Is does not contradict it.
func TestAReplyStatesOneOutcome(t *testing.T) {
	p := &peer{name: "b", inc: 7}
	for _, tc := range []struct {
		code     string
		want     actor.Execution
		sentinel error
		matches  bool
	}{
		{"unreachable", actor.NotExecuted, actor.ErrUnreachable, true},
		{"unreachable~may", actor.MayHaveExecuted, actor.ErrUnreachable, false},
		{"node_down~may", actor.MayHaveExecuted, actor.ErrNodeDown, true},
		{"node_down", actor.NotExecuted, actor.ErrNodeDown, false},
		{"reply_type", actor.NotExecuted, actor.ErrReplyType, false},
		{"no_process~may", actor.MayHaveExecuted, actor.ErrNoProcess, true},
		{"context_deadline~may", actor.MayHaveExecuted, context.DeadlineExceeded, true},
	} {
		err := wire.ReplyError(&wire.Element{Status: wire.StatusError, Code: tc.code, Message: "m"}, "call", p.name, p.inc, "f")
		require.Equal(t, tc.want, actor.Outcome(err), tc.code)
		require.Equal(t, tc.matches, errors.Is(err, tc.sentinel), "%s: %v", tc.code, err)
		require.Equal(t, 1, strings.Count(err.Error(), "executed"), "%s: %v", tc.code, err)
	}
	// A node of an earlier version rejects with its handler's ended ctx:
	// read as this version sends it, may have executed.
	err := wire.ReplyError(&wire.Element{Status: wire.StatusRejected, Code: "context_deadline", Message: "context deadline exceeded"}, "call", p.name, p.inc, "f")
	require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 1, strings.Count(err.Error(), "executed"), "%v", err)

	// A rejection coded like a runtime condition is a rejection.
	err = wire.ReplyError(&wire.Element{Status: wire.StatusRejected, Code: "unreachable", Message: "mine"}, "call", p.name, p.inc, "f")
	require.Equal(t, actor.Executed, actor.Outcome(err))
	require.NotErrorIs(t, err, actor.ErrUnreachable)
	require.Equal(t, "unreachable", actor.ErrorCode(err))
}
