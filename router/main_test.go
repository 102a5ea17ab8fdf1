package router_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) {
	// A child node (sigkill_test.go) also runs "holder": an actor that
	// takes every request and never answers (but Echo{Text: "whoami"},
	// which it answers with its PID), and held() -> Echo{N: how many it
	// holds}.
	testnode.SetChildPreHook(func(sys *actor.System, _ testnode.Options) error {
		var held atomic.Int64
		if _, err := sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
			if m, ok := c.Message().(*testpb.Echo); ok {
				if m.Text == "whoami" {
					// Its PID, for a router to watch: ID in N, incarnation in Text.
					c.Respond(&testpb.Echo{N: int64(c.Self().ID), Text: strconv.FormatUint(c.Self().Incarnation, 10), From: c.Self().Node})
					return
				}
				_ = c.Defer() // kept, never answered
				held.Add(1)
			}
		}), "holder"); err != nil {
			return err
		}
		return sys.Register("held", func(context.Context, proto.Message) (proto.Message, error) {
			return &testpb.Echo{N: held.Load()}, nil
		})
	})
	testnode.MaybeRunChild()
	goleak.VerifyTestMain(m)
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func newSystem(t testing.TB) *actor.System {
	t.Helper()
	sys, err := actor.Start(actor.Config{Name: "local", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sys.Stop(context.Background())) })
	return sys
}

// eventually polls cond every few milliseconds until it holds or d
// passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// tally is a set of local actors that record what they get, per
// routee and per sender.
type tally struct {
	mu   sync.Mutex // protects following
	got  map[actor.PID][]any
	from map[actor.PID]map[actor.PID][]int // routee -> sender -> numbers
}

func newTally() *tally {
	return &tally{got: map[actor.PID][]any{}, from: map[actor.PID]map[actor.PID][]int{}}
}

// spawn starts a routee that records every message and answers a
// request with its own PID.
func (tl *tally) spawn(t testing.TB, sys *actor.System) actor.PID {
	t.Helper()
	pid, err := sys.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case actor.Started, actor.Stopping, actor.Stopped:
		default:
			tl.mu.Lock()
			tl.got[c.Self()] = append(tl.got[c.Self()], m)
			if n, ok := m.(int); ok {
				if tl.from[c.Self()] == nil {
					tl.from[c.Self()] = map[actor.PID][]int{}
				}
				tl.from[c.Self()][c.Sender()] = append(tl.from[c.Self()][c.Sender()], n)
			}
			tl.mu.Unlock()
			c.Respond(c.Self())
		}
	})
	require.NoError(t, err)
	return pid
}

func (tl *tally) count(pid actor.PID) int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return len(tl.got[pid])
}

func (tl *tally) total() int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	n := 0
	for _, v := range tl.got {
		n += len(v)
	}
	return n
}
