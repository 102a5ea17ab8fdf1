package services_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/mailroom-go/mailroom/services"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// node starts a one-node cluster with services; stop it with sys.Stop.
func node(name string) (*actor.System, *services.Services) {
	sys, err := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
	if err != nil {
		panic(err)
	}
	n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: "services-example-cookie"})
	if err != nil {
		panic(err)
	}
	svc, err := services.Start(context.Background(), n, services.Config{})
	if err != nil {
		panic(err)
	}
	return sys, svc
}

func hello(_ context.Context, arg proto.Message) (proto.Message, error) {
	return wrapperspb.String("hello, " + arg.(*wrapperspb.StringValue).Value), nil
}

// Provide a versioned service and call it by name and major version; a
// constraint no provider meets fails at lookup, not executed.
func Example() {
	sys, svc := node("greeter-1")
	defer sys.Stop(context.Background())
	ctx := context.Background()

	err := svc.Provide(ctx, services.Service{
		Name:      "greeter",
		Version:   services.MustVersion("1.4.0"),
		Functions: []services.Function{{Name: "hello", Handler: hello, Idempotent: true}},
	})
	if err != nil {
		panic(err)
	}
	res, err := svc.Call(ctx, "greeter", services.Major(1), "hello", wrapperspb.String("world"))
	fmt.Println(res.(*wrapperspb.StringValue).Value, err)

	_, err = svc.Call(ctx, "greeter", services.Major(2), "hello", wrapperspb.String("world"), services.NoRetry())
	fmt.Println(errors.Is(err, actor.ErrNoVersion), actor.Outcome(err))
	_, err = svc.Call(ctx, "mailer", services.Major(1), "send", wrapperspb.String("x"), services.NoRetry())
	fmt.Println(err)
	// Output:
	// hello, world <nil>
	// true not executed
	// services: call mailer ^1.0.0 function send: lookup failed: no such service: no node announces it (provider down, not started yet, withdrawn, or in another cluster): not executed; safe to retry [1 attempt; stopped: max attempts reached]
}

// A caller that overrides one retry field keeps the provider's others.
func ExampleWithBackoff() {
	sys, svc := node("search-1")
	defer sys.Stop(context.Background())
	err := svc.Provide(context.Background(), services.Service{
		Name:    "search",
		Version: services.MustVersion("2.3.1"),
		Defaults: services.Defaults{
			Retry:    services.RetryPolicy{Budget: 10 * time.Second, MaxAttempts: 5},
			Deadline: 2 * time.Second,
		},
		Functions: []services.Function{{Name: "query", Handler: hello, Idempotent: true}},
	})
	if err != nil {
		panic(err)
	}
	pol, provider, err := svc.Effective("search", services.AtLeast("2.3"), "query", services.WithBackoff(100*time.Millisecond))
	fmt.Println(provider.Node, provider.Version, err)
	fmt.Println(pol)
	// Output:
	// search-1 2.3.1 <nil>
	// budget 10s, backoff 100ms..1s, attempts 5, idempotent true, deadline 2s
}

func ExampleConstraint_Allows() {
	want := services.AtLeast("2.3")
	for _, v := range []string{"2.2.9", "2.3.0", "2.9.1", "3.0.0"} {
		fmt.Println(v, want.Allows(services.MustVersion(v)))
	}
	// Output:
	// 2.2.9 false
	// 2.3.0 true
	// 2.9.1 true
	// 3.0.0 false
}
