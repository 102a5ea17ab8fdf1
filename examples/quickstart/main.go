package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/supervisor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Messages of the counter actor. Local messages may be any Go value; only
// what crosses nodes must be protobuf.
type (
	add   struct{ n int }
	get   struct{}
	crash struct{}
)

// counter keeps a running total. It prints its lifecycle as it happens.
type counter struct{ total int }

func (c *counter) Receive(ctx *actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Restarting:
		fmt.Printf("  counter: restarting (previous %s ended: %v)\n", m.Previous, shortReason(m.Reason))
	case actor.Started:
		fmt.Printf("  counter: started as %s\n", ctx.Self())
	case add:
		c.total += m.n
	case get:
		ctx.Respond(c.total)
	case crash:
		panic("the counter hit a bug")
	case actor.Stopped:
		fmt.Println("  counter: stopped")
	}
}

// greeter answers requests.
func greeter(ctx *actor.Context) {
	if name, ok := ctx.Message().(string); ok {
		ctx.Respond("hello, " + name)
	}
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A node. Its crash reports go to the logger; this demo prints its own.
	sys, err := actor.Start(actor.Config{Name: "quickstart", Logger: actor.DiscardLogger()})
	if err != nil {
		return err
	}

	fmt.Println("1. a supervision tree, configured in code")
	sup, err := supervisor.Start(sys, supervisor.Spec{
		Strategy: supervisor.OneForOne,
		Children: []supervisor.ChildSpec{
			{ID: "counter", Name: "counter", Props: actor.PropsFromProducer(func() actor.Actor { return &counter{} })},
			{ID: "greeter", Name: "greeter", Props: actor.PropsFromFunc(greeter)},
		},
	})
	if err != nil {
		return err
	}
	kids, err := supervisor.WhichChildren(ctx, sys, sup)
	if err != nil {
		return err
	}
	fmt.Printf("  supervisor %s (one-for-one)\n", sup)
	for _, k := range kids {
		fmt.Printf("  ├─ %-8s %s (%s)\n", k.ID, k.PID, k.Restart)
	}

	fmt.Println("2. Send (fire and forget) and Request (wait for the answer)")
	for i := 1; i <= 3; i++ {
		sys.SendNamed("", "counter", add{n: i})
	}
	total, err := sys.RequestNamed(ctx, "", "counter", get{})
	if err != nil {
		return err
	}
	fmt.Printf("  counter total after 1+2+3: %v\n", total)
	hello, err := sys.RequestNamed(ctx, "", "greeter", "world")
	if err != nil {
		return err
	}
	fmt.Printf("  greeter says: %v\n", hello)

	fmt.Println("3. a registered function and Call")
	if err := sys.Register("double", func(_ context.Context, arg proto.Message) (proto.Message, error) {
		n := arg.(*wrapperspb.Int64Value).Value
		if n < 0 {
			return nil, actor.Reject("negative", "double wants a non-negative number")
		}
		return wrapperspb.Int64(2 * n), nil
	}); err != nil {
		return err
	}
	res, err := sys.Call(ctx, "quickstart", "double", wrapperspb.Int64(21))
	if err != nil {
		return err
	}
	fmt.Printf("  double(21) = %d\n", res.(*wrapperspb.Int64Value).Value)
	_, err = sys.Call(ctx, "quickstart", "double", wrapperspb.Int64(-1))
	var rej *actor.RemoteError
	if errors.As(err, &rej) {
		fmt.Printf("  double(-1) rejected [%s], outcome: %s\n", rej.Code, actor.Outcome(err))
	}

	fmt.Println("4. a crash, and the supervisor's restart")
	before, _ := sys.Lookup("counter")
	sys.SendNamed("", "counter", crash{})
	after, err := waitForRestart(ctx, sys, before)
	if err != nil {
		return err
	}
	total, err = sys.RequestNamed(ctx, "", "counter", get{})
	if err != nil {
		return err
	}
	fmt.Printf("  the name \"counter\" now points at %s; its total starts again at %v\n", after, total)

	fmt.Println("5. stop: the tree stops children in reverse order")
	if err := sys.Stop(ctx); err != nil {
		return err
	}
	fmt.Println("  node stopped")
	return nil
}

// waitForRestart polls until the name "counter" points at a new actor.
func waitForRestart(ctx context.Context, sys *actor.System, old actor.PID) (actor.PID, error) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		if pid, ok := sys.Lookup("counter"); ok && pid != old {
			return pid, nil
		}
		select {
		case <-ctx.Done():
			return actor.PID{}, fmt.Errorf("no restart: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func shortReason(err error) string {
	var pe *actor.PanicError
	if errors.As(err, &pe) {
		return fmt.Sprintf("panic: %v", pe.Value)
	}
	return fmt.Sprint(err)
}
