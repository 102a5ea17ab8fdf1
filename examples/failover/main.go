package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/examples/examplepb"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
)

const (
	calls  = 1000
	cookie = "failover-demo-cookie"
)

func main() {
	if os.Getenv("FAILOVER_CHILD") == "1" {
		child()
		return
	}
	if err := parent(); err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		os.Exit(1)
	}
}

// child is the node that will be killed: it sleeps in every call.
func child() {
	sys, err := actor.Start(actor.Config{Name: "worker", Logger: actor.DiscardLogger()})
	check(err)
	check(sys.RegisterTypes(&examplepb.Sleep{}, &examplepb.Echo{}))
	var running atomic.Int64
	check(sys.Register("sleep", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		running.Add(1)
		defer running.Add(-1)
		select {
		case <-time.After(time.Duration(arg.(*examplepb.Sleep).Millis) * time.Millisecond):
			return &examplepb.Echo{Text: "slept"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}))
	check(sys.Register("running", func(context.Context, proto.Message) (proto.Message, error) {
		return &examplepb.Echo{N: running.Load()}, nil
	}))
	n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: cookie})
	check(err)
	fmt.Println(n.Addr())
	select {} // until killed
}

func parent() error {
	sys, err := actor.Start(actor.Config{Name: "caller", Logger: actor.DiscardLogger()})
	if err != nil {
		return err
	}
	defer sys.Stop(context.Background())
	if err := sys.RegisterTypes(&examplepb.Sleep{}, &examplepb.Echo{}); err != nil {
		return err
	}
	node, err := remote.Start(context.Background(), sys, remote.Config{Cookie: cookie})
	if err != nil {
		return err
	}

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "FAILOVER_CHILD=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Process.Kill()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("child did not start: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := node.Connect(ctx, "worker", strings.TrimSpace(addr)); err != nil {
		return err
	}

	// 1,000 calls, no timeout on any of them.
	var killedAt atomic.Int64
	type result struct {
		err     error
		afterMs float64
	}
	results := make(chan result, calls)
	var wg sync.WaitGroup
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := sys.Call(context.Background(), "worker", "sleep", &examplepb.Sleep{Millis: 10_000})
			results <- result{err, float64(time.Now().UnixNano()-killedAt.Load()) / 1e6}
		}()
	}
	// Wait until every call is running on the worker, then kill it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := sys.Call(ctx, "worker", "running", &examplepb.Echo{})
		if err == nil && v.(*examplepb.Echo).N == calls {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the calls did not all start on the worker")
		}
		time.Sleep(5 * time.Millisecond)
	}
	killedAt.Store(time.Now().UnixNano())
	if err := cmd.Process.Kill(); err != nil {
		return err
	}
	_ = cmd.Wait()

	// Count outcomes; a call not back within 10 s of the kill is hung.
	var notExecuted, mayHave, executed, hung int
	var maxMs float64
	timeout := time.After(10 * time.Second)
	for got := 0; got < calls; got++ {
		select {
		case r := <-results:
			switch actor.Outcome(r.err) {
			case actor.NotExecuted:
				notExecuted++
			case actor.MayHaveExecuted:
				mayHave++
			default:
				executed++
			}
			maxMs = max(maxMs, r.afterMs)
		case <-timeout:
			hung = calls - got
			got = calls
		}
	}
	fmt.Printf("calls=%d not_executed=%d may_have_executed=%d executed=%d hung=%d max_fail_ms=%.0f\n",
		calls, notExecuted, mayHave, executed, hung, maxMs)
	if hung == 0 {
		wg.Wait()
	}
	return nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		os.Exit(1)
	}
}
