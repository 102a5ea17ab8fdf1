package patterns_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/patterns"
	"google.golang.org/protobuf/proto"
)

// node starts a node "a" with no links to any other: every other node
// is unreachable. It registers the examples' functions.
func node() (*actor.System, *patterns.Patterns) {
	sys, err := actor.Start(actor.Config{Name: "a", Logger: actor.DiscardLogger()})
	if err != nil {
		panic(err)
	}
	_ = sys.RegisterTypes(&testpb.Echo{})
	_ = sys.Register("read", func(_ context.Context, arg proto.Message) (proto.Message, error) {
		return &testpb.Echo{Text: "value of " + arg.(*testpb.Echo).Text}, nil
	})
	_ = sys.Register("status", func(context.Context, proto.Message) (proto.Message, error) {
		return &testpb.Echo{Text: "healthy"}, nil
	})
	_ = sys.Register("prepare", func(context.Context, proto.Message) (proto.Message, error) {
		return nil, actor.Reject("locked", "the record is locked")
	})
	pt, err := patterns.Start(sys)
	if err != nil {
		panic(err)
	}
	return sys, pt
}

// CallAny calls the local node first and alone; on success the function
// is cast to the other nodes and the local result returned at once. A
// node that cannot be reached is skipped unless UnreachableIsError says
// otherwise.
func ExamplePatterns_CallAny() {
	sys, pt := node()
	defer sys.Stop(context.Background())
	ctx := context.Background()

	res, err := pt.CallAny(ctx, []string{"b", "a"}, "read", &testpb.Echo{Text: "k1"})
	fmt.Printf("%s answered %q, err=%v\n", res.Node, res.Value.(*testpb.Echo).Text, err)

	_, err = pt.CallAny(ctx, []string{"b"}, "read", &testpb.Echo{Text: "k1"})
	fmt.Println(err)

	_, err = pt.CallAny(ctx, []string{"b"}, "read", &testpb.Echo{Text: "k1"}, patterns.UnreachableIsError())
	var failed *patterns.AllFailedError
	if errors.As(err, &failed) {
		for _, ne := range failed.Errors {
			fmt.Printf("%s: unreachable=%v\n", ne.Node, patterns.IsUnreachable(ne.Err))
		}
	}
	// Output:
	// a answered "value of k1", err=<nil>
	// patterns: call_any "read": every node failed (none could be reached; unreachable nodes are skipped)
	// b: unreachable=true
}

// CallAllWait asks every node and reports who answered and who did not;
// it never fails because of a node.
func ExamplePatterns_CallAllWait() {
	sys, pt := node()
	defer sys.Stop(context.Background())

	replies, rejects, err := pt.CallAllWait(context.Background(), []string{"a", "nowhere"}, "status", &testpb.Echo{})
	for _, r := range replies {
		fmt.Printf("%s: %s\n", r.Node, r.Value.(*testpb.Echo).Text)
	}
	for _, r := range rejects {
		fmt.Printf("%s failed: unreachable=%v\n", r.Node, patterns.IsUnreachable(r.Err))
	}
	fmt.Println("err:", err)
	// Output:
	// a: healthy
	// nowhere failed: unreachable=true
	// err: <nil>
}

// CallAll requires every node to succeed; the first rejection decides.
func ExamplePatterns_CallAll() {
	sys, pt := node()
	defer sys.Stop(context.Background())
	ctx := context.Background()

	res, err := pt.CallAll(ctx, []string{"a", "a"}, "status", &testpb.Echo{})
	fmt.Println(len(res), "results, err:", err)

	_, err = pt.CallAll(ctx, []string{"a"}, "prepare", &testpb.Echo{})
	var ne patterns.NodeError
	var rej *actor.RemoteError
	if errors.As(err, &ne) && errors.As(err, &rej) {
		fmt.Printf("%s rejected it: %s (%s)\n", ne.Node, rej.Code, actor.Outcome(err))
	}

	_, err = pt.CallAll(ctx, []string{"b", "c"}, "status", &testpb.Echo{})
	fmt.Println(errors.Is(err, patterns.ErrNoneAvailable))
	// Output:
	// 2 results, err: <nil>
	// a rejected it: locked (executed)
	// true
}
