package bridge_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/mailroom-go/mailroom/protoactor/bridge"
	"github.com/mailroom-go/mailroom/protoactor/internal/testpb"
	"github.com/mailroom-go/mailroom/remote"
)

// childEnv names the node a test binary runs as a child process.
const childEnv = "BRIDGE_TEST_CHILD"

// maybeRunChild runs the child node and exits, when this process is one:
// a bridged node named by childEnv with a "holder" that keeps every Sleep
// request unanswered (a Ping "held?" answers how many it holds) and an
// "echo". It prints "READY <addr> <incarnation>" and runs until stdin
// closes or it is killed.
func maybeRunChild() {
	name := os.Getenv(childEnv)
	if name == "" {
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n, err := bridge.StartNode(context.Background(), bridge.NodeConfig{Name: name, Remote: remote.Config{Cookie: cookie}, Types: testTypes(), Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	var held atomic.Int64
	holder := actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *testpb.Sleep:
			held.Add(1)
		case *testpb.Ping:
			c.Respond(&testpb.Pong{Text: m.Text, N: held.Load()})
		}
	})
	if _, err := n.Actors.Root.SpawnNamed(holder, "holder"); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	if _, err := n.Actors.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &echo{} }), "echo"); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	fmt.Printf("READY %s %x\n", n.Addr(), n.Mailroom.Incarnation())
	_, _ = io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = n.Stop(ctx)
	os.Exit(0)
}

// child is a node in another process.
type child struct {
	name string
	addr string
	inc  uint64
	cmd  *exec.Cmd
	done chan struct{}
}

// startChild runs a child node, killed at the end of the test.
func startChild(t testing.TB, name string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+name)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "READY" {
				c.addr = f[1]
				c.inc, err = strconv.ParseUint(f[2], 16, 64)
				ready <- err
			}
		}
		ready <- fmt.Errorf("child %s exited before it was ready", name)
	}()
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-c.done:
		case <-time.After(15 * time.Second):
			c.kill()
		}
	})
	select {
	case err := <-ready:
		if err != nil {
			c.kill()
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		c.kill()
		t.Fatalf("child %s not ready within 60s", name)
	}
	return c
}

// kill sends SIGKILL and waits for the process to end.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}
