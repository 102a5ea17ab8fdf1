package pidpb_test

import (
	"context"
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/actor/pidpb"
	"github.com/mailroom-go/mailroom/examples/examplepb"
	"github.com/mailroom-go/mailroom/remote"
)

// Two nodes in one process: an actor on "shop" asks "billing" for a
// price with a message that carries its own PID, and the pricer on
// "billing" answers that PID, from its node to the other.
func Example() {
	ctx := context.Background()
	cookie := remote.NewCookie()
	start := func(name string, seeds ...string) (*actor.System, *remote.Node) {
		sys, _ := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
		_ = sys.RegisterTypes(&examplepb.Quote{}, &examplepb.Price{})
		node, err := remote.Start(ctx, sys, remote.Config{Cookie: cookie, Seeds: seeds})
		if err != nil {
			panic(err)
		}
		return sys, node
	}
	billing, billingNode := start("billing")
	defer billing.Stop(ctx)
	shop, _ := start("shop", "billing="+billingNode.Addr())
	defer shop.Stop(ctx)

	// The pricer answers whoever the quote names.
	_, _ = billing.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if q, ok := c.Message().(*examplepb.Quote); ok {
			c.Send(q.ReplyTo.PID(), &examplepb.Price{Item: q.Item, Cents: 1999})
		}
	}), "pricer")

	prices := make(chan string)
	buyer, _ := shop.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case string:
			c.SendNamed("billing", "pricer", &examplepb.Quote{ReplyTo: pidpb.From(c.Self()), Item: m})
		case *examplepb.Price:
			prices <- fmt.Sprintf("%s: %d cents, answered from %s", m.Item, m.Cents, c.Sender().Node)
		}
	})
	shop.Send(buyer, "lamp")
	fmt.Println(<-prices)
	// Output: lamp: 1999 cents, answered from billing
}
