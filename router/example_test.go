package router_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/router"
)

// A consistent-hash router over three workers: every message of one
// user goes to the same worker, in the order it was sent.
func Example() {
	sys, err := actor.Start(actor.Config{Name: "example", Logger: actor.DiscardLogger()})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer func() { _ = sys.Stop(ctx) }()

	var workers []router.Routee
	for i := range 3 {
		pid, err := sys.SpawnFunc(func(c *actor.Context) {
			if _, ok := c.Message().(string); ok {
				c.Respond(i)
			}
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		workers = append(workers, router.Of(pid))
	}
	byUser := func(msg any) string { return msg.(string)[:len("user-1")] }
	r, err := router.NewGroup(sys, router.Config{Kind: router.ConsistentHash, Key: byUser}, workers...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = r.Close(ctx) }()

	first, _ := router.RequestAs[int](ctx, r.Router, sys, "user-1 login")
	same := true
	for _, msg := range []string{"user-1 buy", "user-1 pay", "user-1 logout"} {
		w, err := router.RequestAs[int](ctx, r.Router, sys, msg)
		if err != nil {
			fmt.Println(err)
			return
		}
		same = same && w == first
	}
	fmt.Println("every message of user-1 went to one worker:", same)
	// Output: every message of user-1 went to one worker: true
}
