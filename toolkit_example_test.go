package mailroom_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/mailroomtest"
)

// The README's "Everyday toolkit" section: each example here is one of
// its snippets, checked by go test.

// Timers owned by the actor: one-shot, keyed, periodic, a receive
// timeout; a stopped timer never delivers.
func Example_timers() {
	sys, _ := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger()})
	defer sys.Stop(context.Background())

	out := make(chan string, 10)
	lease, _ := sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			c.StartTimer("expire", 50*time.Millisecond, "expired") // a lease
			c.SendEvery(20*time.Millisecond, "heartbeat")
			c.SetReceiveTimeout(time.Minute) // an idle limit: actor.ReceiveTimeout
		case string:
			switch m {
			case "renew":
				c.StartTimer("expire", 50*time.Millisecond, "expired") // replaces the old one
				out <- "renewed"
			case "release":
				c.CancelTimer("expire")
				out <- "released"
			}
		}
	})
	sys.Send(lease, "renew")
	sys.Send(lease, "release")
	fmt.Println(<-out, <-out)
	// From a goroutine: any PID, any node.
	sys.SendAfter(10*time.Millisecond, lease, "renew")
	fmt.Println(<-out)
	// Output:
	// renewed released
	// renewed
}

// The testkit: three nodes in one process, one of them cut off.
func Example_testkit() {
	c, _ := mailroomtest.NewCluster(mailroomtest.ClusterConfig{Nodes: 3})
	defer c.Close()
	n3 := c.Node("n3").System()
	worker, _ := n3.SpawnFunc(func(*actor.Context) {})
	probe, _ := mailroomtest.NewProbe(c.Node("n1").System())

	_ = probe.Watch(worker)         // a watch across nodes
	_ = c.Partition([]string{"n3"}) // n3 alone: the links to it fail
	term, err := probe.ExpectTerminated(worker, 10*time.Second)
	fmt.Println(errors.Is(term.Reason, actor.ErrNodeDown), err)
	// Output: true <nil>
}
