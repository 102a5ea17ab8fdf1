package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	mr "github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/protoactor/bridge"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const (
	futures = 1000
	timeout = 30 * time.Second
	cookie  = "protoactor-example-cookie" // 16+ bytes; use a long random secret
)

// The messages: a charge is an Int64Value, its receipt a StringValue, a
// slow request a StringValue.
func types() []proto.Message {
	return []proto.Message{&wrapperspb.Int64Value{}, &wrapperspb.StringValue{}}
}

func main() {
	var err error
	if os.Getenv("PROTOACTOR_EXAMPLE_CHILD") == "1" {
		err = billing()
	} else {
		err = orders()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "protoactor example:", err)
		os.Exit(1)
	}
}

// quiet logs errors only: the links going down at the kill are expected.
func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// billing is the child: a protoactor actor named "billing".
func billing() error {
	node, err := bridge.StartNode(context.Background(), bridge.NodeConfig{Name: "billing", Remote: remote.Config{Cookie: cookie}, Types: types(), Logger: quiet()})
	if err != nil {
		return err
	}
	held := 0
	props := actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *wrapperspb.Int64Value: // a charge
			c.Respond(wrapperspb.String(fmt.Sprintf("charged %d", m.Value)))
		case *wrapperspb.StringValue:
			if m.Value == "held?" {
				c.Respond(wrapperspb.Int64(int64(held)))
				return
			}
			held++ // a slow request: never answered
		}
	})
	if _, err := node.Actors.Root.SpawnNamed(props, "billing"); err != nil {
		return err
	}
	fmt.Println(node.Addr())
	select {} // until killed
}

// orders is the parent.
func orders() error {
	node, err := bridge.StartNode(context.Background(), bridge.NodeConfig{Name: "orders", Remote: remote.Config{Cookie: cookie}, Types: types(), Logger: quiet()})
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = node.Stop(ctx)
	}()
	system := node.Actors

	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), "PROTOACTOR_EXAMPLE_CHILD=1")
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.Start(); err != nil {
		return err
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("billing did not start: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := node.Remote.Connect(ctx, "billing", strings.TrimSpace(addr)); err != nil {
		return err
	}

	// Plain protoactor-go from here on, with billing's PID built from its
	// node name (protoactor-go: actor.NewPID("10.0.0.6:8090", "billing")).
	pid := actor.NewPID(bridge.NodeAddress("billing"), "billing")
	res, err := bridge.Result(system.Root.RequestFuture(pid, wrapperspb.Int64(250), timeout))
	if err != nil {
		return err
	}
	fmt.Printf("request: %s\n", res.(*wrapperspb.StringValue).Value)

	terminated := make(chan *actor.Terminated, 1)
	watcher := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *actor.PID:
			c.Watch(m)
		case *actor.Terminated:
			terminated <- m
		}
	}))
	system.Root.Send(watcher, pid)

	// 1,000 slow requests; each future pipes its end to a recorder.
	type end struct {
		res any
		at  time.Time
	}
	ends := make(chan end, futures)
	for range futures {
		f := system.Root.RequestFuture(pid, wrapperspb.String("slow"), timeout)
		rec, _ := system.ProcessRegistry.Add(recorder(func(m any) { ends <- end{m, time.Now()} }), "recorder"+system.ProcessRegistry.NextId())
		f.PipeTo(rec)
	}
	for {
		res, err := bridge.Result(system.Root.RequestFuture(pid, wrapperspb.String("held?"), timeout))
		if err != nil {
			return err
		}
		if res.(*wrapperspb.Int64Value).Value == futures {
			break
		}
	}
	fmt.Printf("billing holds %d requests; killing it (SIGKILL)\n", futures)

	killedAt := time.Now()
	if err := child.Process.Kill(); err != nil {
		return err
	}
	var nodeDown, timedOut, other int
	var worst time.Duration
	var sample error
	for range futures {
		e := <-ends
		worst = max(worst, e.at.Sub(killedAt))
		err, _ := e.res.(error)
		switch {
		case errors.Is(err, mr.ErrNodeDown):
			nodeDown++
			sample = err
		case errors.Is(err, actor.ErrTimeout):
			timedOut++
		default:
			other++
		}
	}
	fmt.Printf("futures=%d node_down=%d timed_out=%d other=%d max_fail_ms=%d (timeout %d ms)\n",
		futures, nodeDown, timedOut, other, worst.Milliseconds(), timeout.Milliseconds())
	if sample != nil {
		fmt.Printf("error: %v\noutcome: %v\n", sample, mr.Outcome(sample))
	}
	select {
	case t := <-terminated:
		fmt.Printf("watcher: Terminated %s %s\n", t.Who.Id, t.Why)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the watcher heard nothing")
	}
	if nodeDown != futures {
		return fmt.Errorf("%d of %d futures did not fail with node down", futures-nodeDown, futures)
	}
	return nil
}

// recorder is a protoactor process that hands what it is sent to fn.
type recorder func(msg any)

func (r recorder) SendUserMessage(_ *actor.PID, msg any) { r(msg) }
func (r recorder) SendSystemMessage(*actor.PID, any)     {}
func (r recorder) Stop(*actor.PID)                       {}
