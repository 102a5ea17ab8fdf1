package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/examples/examplepb"
	"github.com/mailroom-go/mailroom/observer"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/mailroom-go/mailroom/supervisor"
	"google.golang.org/protobuf/proto"
)

const (
	cookie   = "observer-demo-cookie-0123456789"
	envChild = "OBSERVER_DEMO_CHILD"
)

func main() {
	if name := os.Getenv(envChild); name != "" {
		if err := child(name); err != nil {
			fmt.Fprintln(os.Stderr, "observer demo child:", err)
			os.Exit(1)
		}
		return
	}
	addr := flag.String("addr", "127.0.0.1:7070", "where to serve the observer")
	token := flag.String("token", "", "token the observer requires (needed off loopback)")
	run := flag.Duration("for", 0, "stop after this long (0: until Ctrl-C)")
	restartAfter := flag.Duration("restart-after", 5*time.Second, "kill node c and start it again after this long")
	rate := flag.Int("rate", 200, "calls per second from a to b and to c")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *run > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *run)
		defer cancel()
	}
	if err := parent(ctx, *addr, *token, *restartAfter, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "observer demo:", err)
		os.Exit(1)
	}
}

// child is node b or c: an echo function, a proxy pool, until its parent
// goes (stdin closes) or it is killed.
func child(name string) error {
	sys, err := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
	if err != nil {
		return err
	}
	if err := sys.RegisterTypes(&examplepb.Echo{}); err != nil {
		return err
	}
	if err := sys.Register("echo", func(_ context.Context, arg proto.Message) (proto.Message, error) {
		return &examplepb.Echo{Text: arg.(*examplepb.Echo).Text, From: name}, nil
	}); err != nil {
		return err
	}
	n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: cookie, Listen: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	if _, err := proxypool.Start(n, proxypool.Config{}); err != nil {
		return err
	}
	fmt.Println(n.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent goes
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return sys.Stop(ctx)
}

// proc is a child node process.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
}

func startChild(name string) (*proc, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"="+name)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("node %s did not start: %w", name, err)
	}
	return &proc{cmd: cmd, stdin: stdin, addr: strings.TrimSpace(addr)}, nil
}

// stop closes the child's stdin and waits for it (killed after 10s).
func (p *proc) stop() {
	_ = p.stdin.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

func parent(ctx context.Context, addr, token string, restartAfter time.Duration, rate int) error {
	sys, err := actor.Start(actor.Config{Name: "a", Logger: actor.DiscardLogger()})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = sys.Stop(sctx)
	}()
	if err := sys.RegisterTypes(&examplepb.Echo{}); err != nil {
		return err
	}
	node, err := remote.Start(ctx, sys, remote.Config{Cookie: cookie, Listen: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	pools, err := proxypool.Start(node, proxypool.Config{})
	if err != nil {
		return err
	}
	// The observer first, so that its history holds every link.
	served := make(chan string, 1)
	serveErr := make(chan error, 1)
	go func() {
		serveErr <- observer.Serve(ctx, node, addr, observer.Options{Pools: pools, Token: token, OnServe: func(u string) { served <- u }})
	}()
	select {
	case u := <-served:
		fmt.Println("observer:", u)
	case err := <-serveErr:
		return err
	}

	children := map[string]*proc{}
	defer func() {
		for _, p := range children {
			p.stop()
		}
	}()
	for _, name := range []string{"b", "c"} {
		p, err := startChild(name)
		if err != nil {
			return err
		}
		children[name] = p
		if err := node.Connect(ctx, name, p.addr); err != nil {
			return err
		}
	}
	fmt.Println("nodes a (this process), b and c up")

	// A supervision tree whose worker crashes every few seconds.
	worker := actor.PropsFromFunc(func(c *actor.Context) {
		if c.Message() == "crash" {
			panic("crash on purpose (observer demo)")
		}
	})
	if _, err := supervisor.StartNamed(sys, supervisor.Spec{Intensity: 10, Period: time.Minute, Children: []supervisor.ChildSpec{
		{ID: "orders", Props: worker, Name: "orders"},
		{ID: "billing", Props: worker, Name: "billing"},
		supervisor.Nested("jobs", supervisor.Spec{Children: []supervisor.ChildSpec{{ID: "job-1", Props: worker}, {ID: "job-2", Props: worker}}}),
	}}, "app"); err != nil {
		return err
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	for _, peer := range []string{"b", "c"} {
		wg.Go(func() { load(lctx, sys, peer, rate) })
	}
	wg.Go(func() {
		t := time.NewTicker(7 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
				if pid, ok := sys.Lookup("orders"); ok {
					sys.Send(pid, "crash")
				}
			}
		}
	})

	select {
	case <-ctx.Done():
		return nil
	case err := <-serveErr:
		return err
	case <-time.After(restartAfter):
	}
	fmt.Println("killing node c (SIGKILL)")
	c := children["c"]
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
	delete(children, "c")
	c2, err := startChild("c")
	if err != nil {
		return err
	}
	children["c"] = c2
	if err := node.Connect(ctx, "c", c2.addr); err != nil && ctx.Err() == nil {
		return err
	}
	fmt.Println("node c started again: a new incarnation")
	select {
	case <-ctx.Done():
		return nil
	case err := <-serveErr:
		return err
	}
}

// load calls echo on peer about rate times a second until ctx ends; a
// failed call (c while it is down) is counted, not fatal.
func load(ctx context.Context, sys *actor.System, peer string, rate int) {
	t := time.NewTicker(time.Second / time.Duration(max(rate, 1)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := sys.Call(cctx, peer, "echo", &examplepb.Echo{Text: "load"})
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond) // the peer is down: back off a little
		}
	}
}
