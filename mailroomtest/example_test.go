package mailroomtest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/mailroomtest"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Three nodes, one cut off: a request across the partition fails, the two nodes on one side still talk, and after Heal the
// far node answers again.
func ExampleCluster_Partition() {
	ctx := context.Background()
	c, err := mailroomtest.NewCluster(mailroomtest.ClusterConfig{
		Nodes: 3,
		Types: []proto.Message{&wrapperspb.StringValue{}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	echo := actor.PropsFromFunc(func(ac *actor.Context) {
		if m, ok := ac.Message().(*wrapperspb.StringValue); ok {
			ac.Respond(wrapperspb.String(ac.System().Name() + ": " + m.Value))
		}
	})
	for _, n := range c.Nodes() {
		_, _ = n.System().SpawnNamed(echo, "echo")
	}
	ask := func(from, to string) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		res, err := c.Node(from).System().RequestNamed(ctx, to, "echo", wrapperspb.String("hi from "+from))
		if err != nil {
			fmt.Println(from, "->", to, "failed")
			return
		}
		fmt.Println(from, "->", to, res.(*wrapperspb.StringValue).Value)
	}

	ask("n1", "n3")
	_ = c.Partition([]string{"n3"}) // n3 alone; n1 and n2 on the other side
	ask("n1", "n3")
	ask("n1", "n2")
	c.Heal()
	_ = c.Link("n1", "n3")
	ask("n1", "n3")
	// Output:
	// n1 -> n3 n3: hi from n1
	// n1 -> n3 failed
	// n1 -> n2 n2: hi from n1
	// n1 -> n3 n3: hi from n1
}

// A probe takes what an actor sends, and its end; a fake clock fires its
// timer when the example says.
func ExampleProbe() {
	clk := mailroomtest.NewFakeClock()
	sys, _ := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger(), Clock: clk})
	defer sys.Stop(context.Background())
	probe, _ := mailroomtest.NewProbe(sys)

	pid, _ := sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			c.SendAfter(time.Minute, "one minute")
			c.Send(probe.PID(), "armed")
		case string:
			c.Send(probe.PID(), m)
			c.Stop(c.Self())
		}
	})
	_ = probe.Watch(pid)
	_, err := probe.ExpectMessage("armed", 5*time.Second)
	fmt.Println(err)
	fmt.Println(probe.ExpectNoMessage(10 * time.Millisecond)) // the minute has not passed
	clk.Advance(time.Minute)
	_, err = probe.ExpectMessage("one minute", 5*time.Second)
	fmt.Println(err)
	term, err := probe.ExpectTerminated(pid, 5*time.Second)
	fmt.Println(term.Reason, err)
	// Output:
	// <nil>
	// <nil>
	// <nil>
	// <nil> <nil>
}
