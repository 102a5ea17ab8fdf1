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

// Become and the stash: a connection that stashes requests until it is
// open, then handles them in order with its "open" behaviour.
func Example_becomeAndStash() {
	sys, _ := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger()})
	defer sys.Stop(context.Background())

	conn, _ := sys.Spawn(&actor.Props{StashLimit: 100, Producer: func() actor.Actor {
		return actor.ReceiveFunc(func(c *actor.Context) {
			switch m := c.Message().(type) {
			case string:
				if m == "connected" {
					c.Become(func(c *actor.Context) { // open: answer queries
						if q, ok := c.Message().(int); ok {
							c.Respond(q * 10)
						}
					})
					c.UnstashAll() // handled next, in order, by the new behaviour
				}
			case int:
				if err := c.Stash(); err != nil { // over StashLimit: actor.ErrStashFull
					c.RespondError(err)
				}
			}
		})
	}})
	answers := make(chan any, 2)
	for q := 1; q <= 2; q++ {
		go func() {
			v, _ := sys.Request(context.Background(), conn, q)
			answers <- v
		}()
	}
	// Requests that come before "connected" wait in the stash; those
	// after it are answered at once: either way each gets its answer.
	sys.Send(conn, "connected")
	a, b := (<-answers).(int), (<-answers).(int)
	fmt.Println(a + b)
	// Output: 30
}

// Headers and middleware: send middleware stamps a header on what a
// node sends; receive middleware reads it on the node that handles it
// (any node: headers travel on the wire).
func Example_middlewareAndHeaders() {
	stamp := func(next actor.SendFunc) actor.SendFunc {
		return func(ctx context.Context, om *actor.OutMessage) (any, error) {
			return next(actor.WithHeader(ctx, "tenant", "acme"), om)
		}
	}
	logTenant := func(next actor.ReceiveFunc) actor.ReceiveFunc {
		return func(c *actor.Context) {
			if t, ok := c.Headers().Get("tenant"); ok {
				fmt.Println("tenant", t)
			}
			next(c)
		}
	}
	sys, _ := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger(),
		SendMiddleware:    []actor.SendMiddleware{stamp},
		ReceiveMiddleware: []actor.ReceiveMiddleware{logTenant}})
	defer sys.Stop(context.Background())

	pid, _ := sys.SpawnFunc(func(c *actor.Context) {
		if _, ok := c.Message().(string); ok {
			c.Respond("ok")
		}
	})
	// A goroutine sets headers on its ctx; middleware adds its own.
	v, _ := sys.Request(actor.WithHeader(context.Background(), "request-id", "r-1"), pid, "hello")
	fmt.Println(v)
	// Output:
	// tenant acme
	// ok
}

// RequestAsync: an actor asks another without blocking its mailbox; the
// continuation runs later, on the actor's own goroutine, with the answer.
func Example_requestAsync() {
	sys, _ := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger()})
	defer sys.Stop(context.Background())

	prices, _ := sys.SpawnFunc(func(c *actor.Context) {
		if item, ok := c.Message().(string); ok {
			c.Respond(len(item) * 100)
		}
	})
	done := make(chan string)
	shop, _ := sys.SpawnFunc(func(c *actor.Context) {
		if item, ok := c.Message().(string); ok {
			c.RequestAsync(context.Background(), prices, item, func(c *actor.Context, reply any, err error) {
				// Back on the shop's goroutine: its state is safe to touch.
				done <- fmt.Sprint(item, " costs ", reply, " ", err)
			})
			// The shop handles its next message meanwhile.
		}
	})
	sys.Send(shop, "tea")
	fmt.Println(<-done)
	// Output: tea costs 300 <nil>
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
