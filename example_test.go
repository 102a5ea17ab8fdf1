package mailroom_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/mailroom-go/mailroom/supervisor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// One node: an actor under a supervisor, Send and Request.
func Example_actors() {
	ctx := context.Background()
	sys, _ := actor.Start(actor.Config{Name: "orders-1", Logger: actor.DiscardLogger()})
	defer sys.Stop(ctx)

	total := 0
	counter := actor.PropsFromFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case int:
			total += m
		case string: // "total?"
			c.Respond(total)
		}
	})
	_, _ = supervisor.Start(sys, supervisor.Spec{
		Children: []supervisor.ChildSpec{{ID: "counter", Name: "counter", Props: counter}},
	})
	sys.SendNamed("", "counter", 40)
	sys.SendNamed("", "counter", 2)
	total, err := actor.RequestNamedAs[int](ctx, sys, "", "counter", "total?")
	fmt.Println(total, err)
	// Output: 42 <nil>
}

// Two nodes: a function registered on one, called from the other, over
// authenticated links and a proxy pool.
func Example_remote() {
	ctx := context.Background()
	cookie := remote.NewCookie() // every node of a cluster shares it
	start := func(name string, seeds ...string) (*actor.System, *remote.Node) {
		sys, _ := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
		_ = sys.RegisterTypes(&wrapperspb.Int64Value{})
		node, _ := remote.Start(ctx, sys, remote.Config{Cookie: cookie, Seeds: seeds})
		_, _ = proxypool.Start(node, proxypool.Config{})
		return sys, node
	}
	billing, billingNode := start("billing")
	defer billing.Stop(ctx)
	_ = billing.Register("charge", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		amount := arg.(*wrapperspb.Int64Value).Value
		if amount > 1000 {
			return nil, actor.Reject("limit", "over the limit")
		}
		return wrapperspb.String(fmt.Sprintf("charged %d", amount)), nil
	})
	_ = billing.RegisterTypes(&wrapperspb.StringValue{})

	orders, ordersNode := start("orders", "billing="+billingNode.Addr())
	defer orders.Stop(ctx)
	_ = orders.RegisterTypes(&wrapperspb.StringValue{})
	peer, err := ordersNode.WaitPeer(ctx, "billing") // returns once the link to the seed is up
	fmt.Println(peer.Node, peer.Incarnation == billing.Incarnation(), err)

	res, err := actor.CallAs[*wrapperspb.StringValue](ctx, orders, "billing", "charge", wrapperspb.Int64(250))
	fmt.Println(res.Value, err)

	_, err = orders.Call(ctx, "billing", "charge", wrapperspb.Int64(5000))
	var rej *actor.RemoteError
	fmt.Println(errors.As(err, &rej), rej.Code, actor.Outcome(err))

	_, err = orders.Call(ctx, "billing", "refund", wrapperspb.Int64(1))
	fmt.Println(errors.Is(err, actor.ErrNoFunction), actor.Outcome(err))
	// Output:
	// billing true <nil>
	// charged 250 <nil>
	// true limit executed
	// true not executed
}
