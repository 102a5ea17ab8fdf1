package remote

import (
	"context"
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testpb"
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
