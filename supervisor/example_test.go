package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/mailroomtest"
	"github.com/mailroom-go/mailroom/supervisor"
)

// A tree: a worker crashes, its supervisor restarts it under the same
// registered name, and the new instance learns why.
func Example() {
	sys, _ := actor.Start(actor.Config{Name: "example", Logger: actor.DiscardLogger()})
	defer sys.Stop(context.Background())

	events := make(chan string, 16)
	worker := actor.PropsFromFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Restarting:
			var pe *actor.PanicError
			errors.As(m.Reason, &pe)
			events <- fmt.Sprintf("%s restarting (restart %d) after: %v", c.Name(), m.Count, pe.Value)
		case actor.Started:
			events <- c.Name() + " started"
		case actor.Stopped:
			events <- c.Name() + " stopped"
		case string:
			panic(m)
		}
	})

	sup, err := supervisor.Start(sys, supervisor.Spec{
		Strategy: supervisor.OneForOne,
		Children: []supervisor.ChildSpec{
			{ID: "parser", Props: worker, Name: "parser"},
			supervisor.Nested("pool", supervisor.Spec{Children: []supervisor.ChildSpec{
				{ID: "fetcher", Props: worker, Name: "fetcher"},
			}}),
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(<-events)
	fmt.Println(<-events)

	sys.SendNamed("", "fetcher", "bad input")
	fmt.Println(<-events)
	fmt.Println(<-events)
	fmt.Println(<-events)

	kids, _ := supervisor.WhichChildren(context.Background(), sys, sup)
	for _, k := range kids {
		fmt.Println(k.ID, k.IsSupervisor, k.Restarts)
	}
	// Output:
	// parser started
	// fetcher started
	// fetcher stopped
	// fetcher restarting (restart 1) after: bad input
	// fetcher started
	// parser false 0
	// pool true 0
}

// Children added and removed at run time.
func ExampleStartChild() {
	sys, _ := actor.Start(actor.Config{Name: "example", Logger: actor.DiscardLogger()})
	defer sys.Stop(context.Background())
	ctx := context.Background()

	sup, _ := supervisor.Start(sys, supervisor.Spec{})
	job := actor.PropsFromFunc(func(c *actor.Context) {})
	_, err := supervisor.StartChild(ctx, sys, sup, supervisor.ChildSpec{ID: "job-1", Props: job, Restart: supervisor.Transient})
	fmt.Println("start:", err)

	_, err = supervisor.StartChild(ctx, sys, sup, supervisor.ChildSpec{ID: "job-1", Props: job})
	fmt.Println("again:", errors.Is(err, supervisor.ErrIDTaken))

	fmt.Println("delete running:", errors.Is(supervisor.DeleteChild(ctx, sys, sup, "job-1"), supervisor.ErrChildRunning))
	fmt.Println("terminate:", supervisor.TerminateChild(ctx, sys, sup, "job-1"))
	kids, _ := supervisor.WhichChildren(ctx, sys, sup)
	fmt.Println("running:", !kids[0].PID.IsZero())
	fmt.Println("delete:", supervisor.DeleteChild(ctx, sys, sup, "job-1"))
	kids, _ = supervisor.WhichChildren(ctx, sys, sup)
	fmt.Println("children:", len(kids))
	// Output:
	// start: <nil>
	// again: true
	// delete running: true
	// terminate: <nil>
	// running: false
	// delete: <nil>
	// children: 0
}

// A supervisor that restarts too often gives up, and the reason says why.
func ExampleIntensityError() {
	sys, _ := actor.Start(actor.Config{Name: "example", Logger: actor.DiscardLogger()})
	defer sys.Stop(context.Background())

	ended := make(chan actor.Terminated, 1)
	flaky := actor.PropsFromFunc(func(c *actor.Context) {
		switch c.Message() {
		case actor.Started{}:
			c.Send(c.Self(), "connect")
		case "connect":
			c.Exit(errors.New("database unreachable"))
		}
	})
	_, _ = sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			// As a child, the supervisor is watched implicitly.
			if _, err := c.Spawn(supervisor.Props(supervisor.Spec{
				Intensity: 2,
				Children:  []supervisor.ChildSpec{{ID: "db", Props: flaky}},
			})); err != nil {
				panic(err)
			}
		case actor.Terminated:
			ended <- m
		}
	})

	m := <-ended
	var ie *supervisor.IntensityError
	errors.As(m.Reason, &ie)
	fmt.Println(ie.Child, ie.Restarts, ie.Intensity, ie.Reason)
	// Output: db 3 2 database unreachable
}

// A child that keeps failing is restarted after a delay that doubles
// with each failure; a fake clock shows the delays without waiting.
func ExampleBackoff() {
	clk := mailroomtest.NewFakeClock()
	sys, _ := actor.Start(actor.Config{Name: "example", Logger: actor.DiscardLogger(), Clock: clk})
	defer sys.Stop(context.Background())

	started := make(chan struct{}, 10)
	flaky := actor.PropsFromFunc(func(c *actor.Context) {
		switch c.Message() {
		case actor.Started{}:
			started <- struct{}{}
		case "crash":
			panic("crash")
		}
	})
	_, _ = supervisor.Start(sys, supervisor.Spec{Intensity: 10, Period: time.Hour, Children: []supervisor.ChildSpec{{
		ID: "db", Name: "db", Props: flaky,
		Backoff: &supervisor.Backoff{Min: time.Second, Max: 10 * time.Second},
	}}})
	<-started
	for range 3 {
		sys.SendNamed("", "db", "crash")
		var at time.Time
		deadline := time.Now().Add(5 * time.Second) // polling, with a deadline, for the supervisor's timer
		for ok := false; !ok; at, ok = clk.Next() {
			if time.Now().After(deadline) {
				fmt.Println("no backoff timer within 5s")
				return
			}
			time.Sleep(time.Millisecond)
		}
		delay := at.Sub(clk.Now())
		clk.Advance(delay)
		<-started
		fmt.Println("restarted after", delay)
	}
	// Output:
	// restarted after 1s
	// restarted after 2s
	// restarted after 4s
}
