//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
)

// Keys of testnode.Options.Extra that configure a node under test.
const (
	// ExtraCounters is the path of the node's counter file.
	ExtraCounters = "counters"
	// ExtraSinks is how many ordered sinks to spawn ("osink/0", ...).
	ExtraSinks = "sinks"
	// ExtraSinkBound and ExtraSinkPolicy ("block", "failfast") bound the
	// sinks' mailboxes; unbounded by default.
	ExtraSinkBound  = "sink_bound"
	ExtraSinkPolicy = "sink_policy"
	// ExtraProxyQueue and ExtraProxyPolicy configure the node's proxy
	// pool (proxypool.Config ProxyQueue and Policy).
	ExtraProxyQueue  = "proxy_queue"
	ExtraProxyPolicy = "proxy_policy"
	// ExtraPool "off" runs no proxy pool on the node.
	ExtraPool = "pool"
)

// ChildHook is the testnode child hook of the suite, the second half of
// Equip (the proxy pool and the reporter) after ChildPreHook. Set both in
// TestMain before testnode.MaybeRunChild.
func ChildHook(sys *actor.System, n *remote.Node, o testnode.Options) error {
	if childEq == nil {
		return fmt.Errorf("chaos: ChildHook without ChildPreHook")
	}
	if err := childEq.attach(sys, n, o.Extra); err != nil {
		return err
	}
	if o.Extra[ExtraGrainLog] != "" {
		_, err := startGrains(sys, n, o.Extra)
		return err
	}
	return nil
}

// ChildPreHook is the first half of ChildHook, run before the child's
// remote node starts, so that its functions and sinks exist before a
// peer can call them (a restarted node answered "no such function"
// otherwise). Set it with testnode.SetChildPreHook.
func ChildPreHook(sys *actor.System, o testnode.Options) error {
	eq, err := prepare(sys, o.Extra)
	childEq = eq
	return err
}

var childEq *Equipped // the child process's own

// Equipped is what Equip installed on a node.
type Equipped struct {
	Counters *Counters // nil without ExtraCounters
	Gate     *Gate
	Pools    *proxypool.Manager // nil with ExtraPool "off"
	sinks    int
}

// Equip installs the suite's machinery on a node (a child, or a node in
// the test process): a proxy pool, ordered sinks, the "gate" function
// (Echo{Text: "close"|"open"}), "whoami" (Echo{Text: the incarnation in
// hex, From: the node}) and the counters, with a reporter that
// writes the node's goroutine count and RSS to them every 100 ms until
// the system stops.
func Equip(sys *actor.System, n *remote.Node, extra map[string]string) (*Equipped, error) {
	eq, err := prepare(sys, extra)
	if err != nil {
		return nil, err
	}
	return eq, eq.attach(sys, n, extra)
}

// attach is what needs the remote node: the proxy pool and the reporter.
func (eq *Equipped) attach(sys *actor.System, n *remote.Node, extra map[string]string) error {
	if extra[ExtraPool] != "off" {
		cfg := proxypool.Config{ProxyQueue: atoi(extra[ExtraProxyQueue]), Eager: true} // the pooled scenarios start with pools up
		if extra[ExtraProxyPolicy] == "failfast" {
			cfg.Policy = actor.FailFast
		}
		m, err := proxypool.Start(n, cfg)
		if err != nil {
			return err
		}
		eq.Pools = m
	}
	if eq.Counters != nil {
		go report(sys, n, eq.Counters, eq.sinks) // ends when the system stops
	}
	return nil
}

// prepare installs what peers call: counters, functions and sinks.
func prepare(sys *actor.System, extra map[string]string) (*Equipped, error) {
	eq := &Equipped{Gate: &Gate{}}
	if path := extra[ExtraCounters]; path != "" {
		ctr, err := OpenCounters(path)
		if err != nil {
			return nil, err
		}
		eq.Counters = ctr
		sys.SubscribeDeadLetters(func(actor.DeadLetter) { ctr.Add(DeadLetters, 1) })
	}
	if err := sys.Register("gate", func(_ context.Context, arg proto.Message) (proto.Message, error) {
		switch t := arg.(*testpb.Echo).Text; t {
		case "close":
			eq.Gate.Close()
		case "open":
			eq.Gate.Open()
		default:
			return nil, actor.Reject("bad_arg", "gate wants close or open, not "+t)
		}
		return &testpb.Echo{Text: "ok"}, nil
	}); err != nil {
		return nil, err
	}
	if err := sys.Register("whoami", func(context.Context, proto.Message) (proto.Message, error) {
		return &testpb.Echo{Text: strconv.FormatUint(sys.Incarnation(), 16), From: sys.Name()}, nil
	}); err != nil {
		return nil, err
	}
	if eq.Counters != nil {
		if err := sys.Register("spawn_calls", spawnCalls(sys, eq.Counters)); err != nil {
			return nil, err
		}
	}
	sinks := atoi(extra[ExtraSinks])
	if sinks > 0 && eq.Counters == nil {
		return nil, fmt.Errorf("chaos: %d sinks need a counter file (%s)", sinks, ExtraCounters)
	}
	policy := actor.Block
	if extra[ExtraSinkPolicy] == "failfast" {
		policy = actor.FailFast
	}
	for i := range sinks {
		props := actor.PropsFromProducer(func() actor.Actor {
			return &orderedSink{ctr: eq.Counters, gate: eq.Gate, last: map[actor.PID]int64{}}
		})
		if b := atoi(extra[ExtraSinkBound]); b > 0 {
			props = props.WithMailbox(b, policy)
		}
		if _, err := sys.SpawnNamed(props, SinkName(i)); err != nil {
			return nil, err
		}
	}
	eq.sinks = sinks
	return eq, nil
}

// spawnCalls is the "spawn_calls" function: Echo{Text: "<node> <fn>", N:
// n, From: ms} starts n concurrent calls of fn on node (argument
// Sleep{Millis: ms}, default 60000),
// each from its own sender, and returns at once; how each ends is
// counted in ctr (CallsEnded, CallsNodeDown, CallsOther, CallsLastEnd).
func spawnCalls(sys *actor.System, ctr *Counters) actor.Handler {
	return func(_ context.Context, arg proto.Message) (proto.Message, error) {
		e := arg.(*testpb.Echo)
		node, fn, ok := strings.Cut(e.Text, " ")
		if !ok {
			return nil, actor.Reject("bad_arg", "want \"<node> <fn>\"")
		}
		ms := int64(atoi(e.From))
		if ms == 0 {
			ms = 60_000
		}
		for range e.N {
			go func() { // ends with the call: liveness ends it when node goes
				_, err := sys.NewSender().Call(context.Background(), node, fn, &testpb.Sleep{Millis: ms})
				switch {
				case errors.Is(err, actor.ErrNodeDown) && actor.Outcome(err) == actor.MayHaveExecuted:
					ctr.Add(CallsNodeDown, 1)
				default:
					ctr.Add(CallsOther, 1)
				}
				ctr.Max(CallsLastEnd, time.Now().UnixMilli())
				ctr.Add(CallsEnded, 1)
			}()
		}
		return &testpb.Echo{N: e.N}, nil
	}
}

// report writes the node's vitals to its counters until sys stops.
func report(sys *actor.System, n *remote.Node, ctr *Counters, sinks int) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	pids := make([]actor.PID, 0, sinks)
	for i := range sinks {
		if pid, ok := sys.Lookup(SinkName(i)); ok {
			pids = append(pids, pid)
		}
	}
	for tick := 0; ; tick++ {
		ctr.Store(Received, int64(n.Stats().Received))
		var queued int64
		for _, pid := range pids {
			queued += int64(max(sys.MailboxLen(pid), 0))
		}
		ctr.Store(Queued, queued)
		if tick%10 == 0 {
			ctr.Store(Goroutines, int64(runtime.NumGoroutine()))
			if rss, err := RSS(os.Getpid()); err == nil {
				ctr.Store(Resident, rss)
			}
		}
		select {
		case <-sys.Done():
			return
		case <-t.C:
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
