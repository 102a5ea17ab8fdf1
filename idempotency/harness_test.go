package idempotency

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"google.golang.org/protobuf/proto"
)

// served is what install put on a node: its guard and its run counters.
type served struct {
	g    *Guard
	runs atomic.Int64 // handler runs of idem.echo and idem.actor
}

// install serves g on sys (Serve) with:
//   - idem.echo (Handler): Echo{Text: "ran "+text, N: runs so far}
//   - idem.reject (Handler): a rejection with code "nope"
//   - idem.hang (Handler): writes the file marks/<key>, then waits for
//     its ctx (a handler killed mid-work)
//   - the actor "idem.actor" (Middleware): answers Echo{Text: "hold"} from
//     another goroutine once release is closed, anything else at once,
//     with Echo{Text: "actor "+text, N: runs so far}.
func install(sys *actor.System, g *Guard, marks string, release <-chan struct{}) (*served, error) {
	s := &served{g: g}
	if err := Serve(sys, g); err != nil {
		return nil, err
	}
	if err := sys.Register("idem.echo", Handler(g, func(_ context.Context, arg proto.Message) (proto.Message, error) {
		return &testpb.Echo{Text: "ran " + arg.(*testpb.Echo).Text, N: s.runs.Add(1)}, nil
	})); err != nil {
		return nil, err
	}
	if err := sys.Register("idem.reject", Handler(g, func(context.Context, proto.Message) (proto.Message, error) {
		s.runs.Add(1)
		return nil, actor.Reject("nope", "rejected")
	})); err != nil {
		return nil, err
	}
	if err := sys.Register("idem.hang", Handler(g, func(ctx context.Context, _ proto.Message) (proto.Message, error) {
		key, _ := KeyFrom(ctx)
		if err := os.WriteFile(filepath.Join(marks, key), nil, 0o600); err != nil {
			return nil, err
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})); err != nil {
		return nil, err
	}
	_, err := sys.SpawnNamed(&actor.Props{
		Producer: func() actor.Actor {
			return actor.ReceiveFunc(func(c *actor.Context) {
				e, ok := c.Message().(*testpb.Echo)
				if !ok {
					return
				}
				n := s.runs.Add(1)
				reply := &testpb.Echo{Text: "actor " + e.Text, N: n}
				if e.Text != "hold" {
					c.Respond(reply)
					return
				}
				d := c.Defer()
				go func() {
					<-release
					d.Reply(reply, nil)
				}()
			})
		},
		ReceiveMiddleware: []actor.ReceiveMiddleware{Middleware(g)},
	}, "idem.actor")
	return s, err
}

// childSetup is the child nodes' pre-hook: with Extra "store" ("dir"
// with "dir", or "memory" with "maxkeys"), install on a guard of that
// store, marks in Extra "marks".
func childSetup(sys *actor.System, o testnode.Options) error {
	var store Store
	switch o.Extra["store"] {
	case "":
		return nil
	case "dir":
		d, err := OpenDir(o.Extra["dir"], DirConfig{})
		if err != nil {
			return err
		}
		store = d
	case "memory":
		n, _ := strconv.Atoi(o.Extra["maxkeys"])
		store = NewMemory(MemoryConfig{MaxKeys: n})
	default:
		return fmt.Errorf("unknown store %q", o.Extra["store"])
	}
	_, err := install(sys, NewGuard(store, sys.Incarnation()), o.Extra["marks"], make(chan struct{}))
	return err
}

// eventually polls cond every 5 ms until it holds, or fails the test
// after timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}
