package actor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/actor"
)

// An actor's timers deliver to the actor itself; a stopped one never
// does, even if it was already due.
func ExampleContext_SendAfter() {
	sys, _ := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger()})
	defer sys.Stop(context.Background())

	done := make(chan string, 3)
	_, _ = sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			c.SendAfter(20*time.Millisecond, "second")
			c.SendAfter(10*time.Millisecond, "first")
			never := c.SendAfter(5*time.Millisecond, "never")
			never.Stop()
		case string:
			done <- m
		}
	})
	fmt.Println(<-done, <-done)
	// Output: first second
}

// A keyed timer is replaced when its key is started again: a debounce.
// The receive timeout ends an actor that has been idle (a passivation).
func ExampleContext_StartTimer() {
	sys, _ := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger()})
	defer sys.Stop(context.Background())

	out := make(chan string, 10)
	pid, _ := sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			c.SetReceiveTimeout(200 * time.Millisecond)
		case int: // a keystroke: flush once they stop coming for 50 ms
			c.StartTimer("flush", 50*time.Millisecond, "flush")
		case string:
			out <- m
		case actor.ReceiveTimeout:
			out <- "idle: stopping"
			c.Stop(c.Self())
		}
	})
	for i := range 5 {
		sys.Send(pid, i)
	}
	fmt.Println(<-out)
	fmt.Println(<-out)
	// Output:
	// flush
	// idle: stopping
}

// A periodic timer ticks until it is stopped; a cron timer fires at the
// times a standard 5-field expression names.
func ExampleContext_SendEvery() {
	sys, _ := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger()})
	defer sys.Stop(context.Background())

	out := make(chan string, 10)
	beats := 0
	_, _ = sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			if err := c.StartCronTimer("report", "0 9 * * MON-FRI", "report"); err != nil {
				panic(err)
			}
			_, err := c.SendCron("0 25 * * *", "never")
			out <- err.Error()
			c.StartPeriodicTimer("heartbeat", 10*time.Millisecond, "beat")
		case string:
			out <- m
			if beats++; beats == 2 {
				c.CancelTimer("heartbeat")
			}
		}
	})
	fmt.Println(<-out)
	fmt.Println(<-out, <-out)
	// Output:
	// mailroom: cron expression "0 25 * * *": end of range (25) above maximum (23): 25
	// beat beat
}

// System.SendAfter sends from outside any actor, to any PID.
func ExampleSystem_SendAfter() {
	sys, _ := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger()})
	defer sys.Stop(context.Background())

	got := make(chan any, 1)
	pid, _ := sys.SpawnFunc(func(c *actor.Context) {
		if m, ok := c.Message().(string); ok {
			got <- m
		}
	})
	sys.SendAfter(10*time.Millisecond, pid, "reminder")
	fmt.Println(<-got)
	// Output: reminder
}
