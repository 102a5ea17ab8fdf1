package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const (
	service = "mailroom-cluster-demo"
	cookie  = "cluster-demo-cookie"
	ttl     = 2 * time.Second
)

func main() {
	addr := os.Getenv("CONSUL_HTTP_ADDR")
	if addr == "" {
		fmt.Fprintln(os.Stderr, "cluster: no Consul agent; run `make demo-cluster` (it starts one)")
		os.Exit(2)
	}
	if name := os.Getenv("CLUSTER_NODE"); name != "" {
		if err := child(name, addr); err != nil {
			fmt.Fprintf(os.Stderr, "[%s] %v\n", name, err)
			os.Exit(1)
		}
		return
	}
	if err := run(addr); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

// start makes a node on Consul with a proxy pool; it prints the events it
// sees, prefixed with its name.
func start(name, addr string) (*actor.System, *remote.Node, error) {
	sys, node, _, err := startPools(name, addr)
	return sys, node, err
}

func startPools(name, addr string) (*actor.System, *remote.Node, *proxypool.Manager, error) {
	sys, err := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := sys.RegisterTypes(&durationpb.Duration{}, &wrapperspb.StringValue{}); err != nil {
		return nil, nil, nil, err
	}
	_ = sys.Register("work", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		select {
		case <-time.After(arg.(*durationpb.Duration).AsDuration()):
			return wrapperspb.String("done"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	consul, err := discovery.NewConsul(discovery.ConsulConfig{Address: addr, Service: service, TTL: ttl, Logger: actor.DiscardLogger()})
	if err != nil {
		return nil, nil, nil, err
	}
	// Start waits for the Consul agent to register the node: bound it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	node, err := remote.Start(ctx, sys, remote.Config{Cookie: cookie, Discovery: consul})
	if err != nil {
		return nil, nil, nil, err
	}
	node.AddHooks(remote.Hooks{OnMember: func(ev discovery.Event) {
		if ev.Member.Node != name {
			fmt.Printf("[%s] discovery: %s %s (incarnation %016x)\n", name, ev.Member.Node, ev.Type, ev.Member.Incarnation)
		}
	}})
	pools, err := proxypool.Start(node, proxypool.Config{Eager: true}) // pools up before the first call, to show them torn down and rebuilt
	if err != nil {
		return nil, nil, nil, err
	}
	return sys, node, pools, nil
}

// child runs beta or gamma until its stdin closes.
func child(name, addr string) error {
	sys, _, err := start(name, addr)
	if err != nil {
		return err
	}
	fmt.Printf("[%s] up, incarnation %016x\n", name, sys.Incarnation())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return sys.Stop(ctx)
}

type proc struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
}

func spawn(name string) (*proc, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CLUSTER_NODE="+name)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &proc{cmd: cmd, stdin: in}, nil
}

func (p *proc) stop() { _ = p.stdin.Close(); _ = p.cmd.Wait() }

func run(addr string) error {
	ctx := context.Background()
	sys, node, pools, err := startPools("alpha", addr)
	if err != nil {
		return err
	}
	defer sys.Stop(ctx)
	fmt.Printf("[alpha] up, incarnation %016x\n", sys.Incarnation())

	beta, err := spawn("beta")
	if err != nil {
		return err
	}
	defer beta.stop()
	gamma, err := spawn("gamma")
	if err != nil {
		return err
	}
	if err := waitPeer(node, "gamma", 0); err != nil {
		return err
	}
	if err := waitPeer(node, "beta", 0); err != nil {
		return err
	}
	first, _ := node.Peer("gamma")

	fmt.Println("== alpha makes 5 calls to gamma's 30-second work, then gamma is killed (SIGKILL)")
	var wg sync.WaitGroup
	var killedAt atomic.Int64
	results := make(chan string, 5)
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sys.NewSender()
			_, err := h.Call(ctx, "gamma", "work", durationpb.New(30*time.Second))
			after := time.Duration(time.Now().UnixNano() - killedAt.Load())
			results <- fmt.Sprintf("[alpha] call %d ended %v after the kill: %s (%v)", i, after.Round(time.Millisecond), actor.Outcome(err), shortErr(err))
		}()
	}
	if err := waitPending(node, "gamma", 5); err != nil {
		return err
	}
	killed := time.Now()
	killedAt.Store(killed.UnixNano())
	_ = gamma.cmd.Process.Kill()
	_ = gamma.cmd.Wait()
	wg.Wait()
	close(results)
	for r := range results {
		fmt.Println(r)
	}
	fmt.Printf("== calls failed at once (the link closed); Consul declares the incarnation gone within its TTL (%v)\n", ttl)
	if err := waitGone(node, "gamma", first.Incarnation); err != nil {
		return err
	}
	fmt.Printf("[alpha] gamma %016x is gone %v after the kill\n", first.Incarnation, time.Since(killed).Round(time.Millisecond))

	fmt.Println("== gamma restarts under the same name: a new incarnation, discovered by everyone")
	gamma, err = spawn("gamma")
	if err != nil {
		return err
	}
	defer gamma.stop()
	if err := waitPeer(node, "gamma", first.Incarnation); err != nil {
		return err
	}
	again, _ := node.Peer("gamma")
	v, err := sys.Call(ctx, "gamma", "work", durationpb.New(10*time.Millisecond))
	if err != nil {
		return err
	}
	fmt.Printf("[alpha] gamma is now %016x (was %016x); a call to it: %s\n", again.Incarnation, first.Incarnation, v.(*wrapperspb.StringValue).Value)
	for _, peer := range []string{"beta", "gamma"} {
		info := pools.ConnectionInfo(peer)
		st := pools.Stats(peer)
		fmt.Printf("[alpha] pool to %s: %s, %d proxies, built %d times; %d batches, %d messages (mean %.1f), %d bytes, queue %d, dead letters %d\n",
			peer, info.Status, info.Proxies, info.Builds, st.Batches, st.Messages, st.MeanBatch, st.Bytes, st.QueueDepth, st.DeadLetters)
	}
	fmt.Println("== stopping everyone gracefully (each deregisters)")
	return nil
}

func shortErr(err error) string {
	if err == nil {
		return "ok"
	}
	switch {
	case errors.Is(err, actor.ErrNodeDown):
		return "node down"
	case errors.Is(err, actor.ErrNotSent):
		return "not sent"
	}
	return err.Error()
}

// waitPeer waits (30 s at most) until alpha has a link to node with an
// incarnation other than not; Consul's events make WaitPeer dial it.
func waitPeer(node *remote.Node, name string, not uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := node.WaitPeer(ctx, name)
	if err == nil && p.Incarnation == not {
		return fmt.Errorf("%s is still incarnation %016x", name, not)
	}
	return err
}

func waitPending(node *remote.Node, name string, n int) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range node.Pending() {
			if p.Node == name && p.Count >= n {
				time.Sleep(100 * time.Millisecond) // let the calls start running there
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("the calls did not start")
}

func waitGone(node *remote.Node, name string, inc uint64) error {
	deadline := time.Now().Add(3 * ttl)
	for time.Now().Before(deadline) {
		if p, ok := node.Peer(name); !ok || p.Incarnation != inc {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s was not declared gone", name)
}
