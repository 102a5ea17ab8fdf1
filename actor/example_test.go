package actor_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"google.golang.org/protobuf/proto"
)

// A node, an actor, a request and its answer.
func Example() {
	sys, err := actor.Start(actor.Config{Name: "orders-1", Logger: actor.DiscardLogger()})
	if err != nil {
		panic(err)
	}
	defer sys.Stop(context.Background())

	greeter, _ := sys.SpawnFunc(func(c *actor.Context) {
		if name, ok := c.Message().(string); ok {
			c.Respond("hello " + name)
		}
	})
	reply, err := sys.Request(context.Background(), greeter, "world")
	fmt.Println(reply, err)
	// Output: hello world <nil>
}

// Registered functions: Call waits for the result; a handler's error is a
// rejection, and Outcome tells whether the work ran.
func ExampleSystem_Call() {
	sys, _ := actor.Start(actor.Config{Name: "billing", Logger: actor.DiscardLogger()})
	defer sys.Stop(context.Background())

	_ = sys.Register("charge", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		req := arg.(*testpb.Echo)
		if req.N > 100 {
			return nil, actor.Reject("limit", "over the limit")
		}
		return &testpb.Echo{Text: "charged", N: req.N}, nil
	})
	ok, err := sys.Call(context.Background(), "billing", "charge", &testpb.Echo{N: 5})
	fmt.Println(ok.(*testpb.Echo).Text, err)

	_, err = sys.Call(context.Background(), "billing", "charge", &testpb.Echo{N: 500})
	var rej *actor.RemoteError
	fmt.Println(errors.As(err, &rej), rej.Code, actor.Outcome(err))

	_, err = sys.Call(context.Background(), "billing", "refund", &testpb.Echo{})
	fmt.Println(errors.Is(err, actor.ErrNoFunction), actor.Outcome(err))
	// Output:
	// charged <nil>
	// true limit executed
	// true not executed
}

// Watching an actor: Terminated says why it ended.
func ExampleContext_Watch() {
	sys, _ := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger()})
	defer sys.Stop(context.Background())

	worker, _ := sys.SpawnFunc(func(c *actor.Context) {
		if c.Message() == "crash" {
			panic("worker bug")
		}
	})
	done := make(chan string)
	_, _ = sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started:
			c.Watch(worker)
			c.Send(worker, "crash")
		case actor.Terminated:
			var pe *actor.PanicError
			errors.As(m.Reason, &pe)
			done <- fmt.Sprintf("worker ended: %v", pe.Value)
		}
	})
	fmt.Println(<-done)
	// Output: worker ended: worker bug
}

// A Caller is anything that sends: the same code works from the System,
// from a Sender handle, and from inside an actor (whose Context is the
// sender the target sees).
func ExampleCaller() {
	ctx := context.Background()
	sys, _ := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger()})
	defer sys.Stop(ctx)

	_, _ = sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if n, ok := c.Message().(int); ok {
			c.Respond(n + 1)
		}
	}), "adder")
	// next asks the adder for n+1, whoever asks.
	next := func(c actor.Caller, n int) int {
		v, err := actor.RequestNamedAs[int](ctx, c, "", "adder", n)
		if err != nil {
			panic(err)
		}
		return v
	}
	relay, _ := sys.SpawnFunc(func(c *actor.Context) {
		if n, ok := c.Message().(int); ok {
			c.Respond(next(c, n)) // c is a Caller too
		}
	})

	fmt.Println(next(sys, 1))
	fmt.Println(next(sys.NewSender(), 2))
	fmt.Println(actor.RequestAs[int](ctx, sys, relay, 3))
	// Output:
	// 2
	// 3
	// 4 <nil>
}

// The typed helpers check the answer's type. One of another type is an
// error that says the work ran (the function executed; its result was not
// what the caller expected) and names both types.
func ExampleCallAs() {
	ctx := context.Background()
	sys, _ := actor.Start(actor.Config{Name: "billing", Logger: actor.DiscardLogger()})
	defer sys.Stop(ctx)

	_ = sys.Register("charge", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		return &testpb.Echo{Text: "charged", N: arg.(*testpb.Echo).N}, nil
	})
	receipt, err := actor.CallAs[*testpb.Echo](ctx, sys, "billing", "charge", &testpb.Echo{N: 250})
	fmt.Println(receipt.Text, receipt.N, err)

	_, err = actor.CallAs[*testpb.Blob](ctx, sys, "billing", "charge", &testpb.Echo{N: 1})
	fmt.Println(errors.Is(err, actor.ErrReplyType), actor.Outcome(err))
	fmt.Println(err)
	// Output:
	// charged 250 <nil>
	// true executed
	// mailroom: call on node billing to charge: reply of an unexpected type: got *testpb.Echo, want *testpb.Blob: executed
}
