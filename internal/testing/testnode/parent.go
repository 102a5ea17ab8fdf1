package testnode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/remote"
)

// DefaultCookie is the cookie of test nodes whose Options name none.
const DefaultCookie = "mailroom-test-cookie-0123456789"

// Child is a node running in another process.
type Child struct {
	Name        string
	Addr        string
	Incarnation uint64
	Opts        Options

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuffer
	exited chan struct{}
	err    error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start runs a child node and waits until it listens. It is killed when
// the test ends; its stderr is logged if the test failed.
func Start(t testing.TB, o Options) *Child {
	t.Helper()
	c, err := StartProcess(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Stop(10 * time.Second) // graceful (it kills after the bound)
		if t.Failed() {
			t.Logf("child %s stderr:\n%s", c.Name, c.Stderr())
		}
	})
	return c
}

// StartProcess runs a child node without a testing.TB (examples, chaos).
func StartProcess(o Options) (*Child, error) {
	if o.Cookie == "" {
		o.Cookie = DefaultCookie
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+string(raw))
	c := &Child{Name: o.Name, Opts: o, cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = c.stderr
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testnode: start %s: %w", o.Name, err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if f := strings.Fields(line); len(f) == 3 && f[0] == "READY" {
				c.Addr = f[1]
				inc, err := strconv.ParseUint(f[2], 16, 64)
				c.Incarnation = inc
				ready <- err
				continue
			}
			fmt.Fprintf(c.stderr, "[stdout] %s\n", line)
		}
		ready <- fmt.Errorf("testnode: %s exited before it was ready", o.Name)
	}()
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	select {
	case err := <-ready:
		if err != nil {
			c.Kill()
			return nil, fmt.Errorf("%w\n%s", err, c.stderr.String())
		}
	case <-time.After(30 * time.Second):
		c.Kill()
		return nil, fmt.Errorf("testnode: %s not ready within 30s\n%s", o.Name, c.stderr.String())
	}
	return c, nil
}

// Seed is the child's "name=addr" for a Seeds list.
func (c *Child) Seed() string { return c.Name + "=" + c.Addr }

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Kill sends SIGKILL and waits for the process to end.
func (c *Child) Kill() {
	_ = c.cmd.Process.Kill()
	<-c.exited
}

// Signal sends sig without waiting.
func (c *Child) Signal(sig syscall.Signal) error { return c.cmd.Process.Signal(sig) }

// Stopped reports whether the child is stopped now (SIGSTOP), from its
// state in /proc (Linux); false where that cannot be read. A signal is
// delivered asynchronously: a test that freezes a child polls this before
// it counts the child as frozen.
func (c *Child) Stopped() bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, the
	// state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'T' || b[i+2] == 't'
}

// Stop asks the child to stop gracefully (stdin closed) and waits; after
// timeout it kills it.
func (c *Child) Stop(timeout time.Duration) error {
	select {
	case <-c.exited:
		return nil // already gone (killed by the test)
	default:
	}
	_ = c.stdin.Close()
	select {
	case <-c.exited:
		return c.err
	case <-time.After(timeout):
		c.Kill()
		return fmt.Errorf("testnode: %s did not stop within %v", c.Name, timeout)
	}
}

// Exited is closed when the process has ended.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// Stderr is what the child wrote to stderr so far.
func (c *Child) Stderr() string { return c.stderr.String() }

// Local starts an in-process node for the test, stopped at cleanup.
func Local(t testing.TB, o Options) (*actor.System, *remote.Node) {
	t.Helper()
	if o.Cookie == "" {
		o.Cookie = DefaultCookie
	}
	sys, err := actor.Start(actor.Config{Name: o.Name, Logger: testLogger(t, o.LogLevel)})
	if err != nil {
		t.Fatal(err)
	}
	if err := Install(sys); err != nil {
		t.Fatal(err)
	}
	rc, err := RemoteConfigWith(o, sys.Logger())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := remote.Start(ctx, sys, rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := sys.Stop(ctx); err != nil {
			t.Errorf("stop %s: %v", o.Name, err)
		}
	})
	return sys, n
}
