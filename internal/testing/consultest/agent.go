package consultest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Agent is a dev-mode Consul agent owned by one test, on free loopback
// ports that stay the same across Restart. Dev mode keeps everything in
// memory, so a restart forgets every registration, as a real agent that
// lost its data would.
type Agent struct {
	t     testing.TB
	bin   string
	dir   string
	ports ports

	// Owned by the test goroutine.
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

type ports struct{ http, serfLAN, serfWAN, server int }

// StartAgent starts an agent from MAILROOM_CONSUL_BIN (skipping or, under
// CI=true, failing the test if it is unset) and waits until it has a
// leader. The agent is stopped when the test ends.
func StartAgent(t testing.TB) *Agent {
	t.Helper()
	a := &Agent{t: t, bin: Bin(t), dir: t.TempDir()}
	t.Cleanup(a.cleanup)
	var err error
	for attempt := 1; attempt <= 5; attempt++ {
		if a.ports, err = freePorts(); err != nil {
			t.Fatalf("consultest: %v", err)
		}
		if err = a.start(); err == nil {
			return a
		}
		t.Logf("consultest: attempt %d: %v", attempt, err)
	}
	t.Fatalf("consultest: could not start a Consul agent: %v\n%s", err, a.logTail())
	return nil
}

// Addr is the agent's HTTP address, host:port.
func (a *Agent) Addr() string { return "127.0.0.1:" + strconv.Itoa(a.ports.http) }

// Stop terminates the agent and waits for it to exit. Idempotent.
func (a *Agent) Stop() {
	a.t.Helper()
	if a.cmd == nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(10 * time.Second):
		a.t.Logf("consultest: agent ignored SIGTERM for 10s; killing it")
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
	a.cmd = nil
}

// Start starts a stopped agent again on the same ports and waits for a
// leader.
func (a *Agent) Start() {
	a.t.Helper()
	if a.cmd != nil {
		a.t.Fatalf("consultest: agent already running")
	}
	if err := a.start(); err != nil {
		a.t.Fatalf("consultest: restarting the agent on %s: %v\n%s", a.Addr(), err, a.logTail())
	}
}

// Restart stops the agent and starts it again on the same ports: it
// comes back empty.
func (a *Agent) Restart() {
	a.t.Helper()
	a.Stop()
	a.Start()
}

func (a *Agent) start() error {
	logf, err := os.OpenFile(a.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own copy
	p := a.ports
	cmd := exec.Command(a.bin, "agent", "-dev",
		"-node", "consultest",
		"-bind", "127.0.0.1", "-client", "127.0.0.1",
		"-http-port", strconv.Itoa(p.http), "-dns-port", "-1", "-grpc-port", "-1",
		"-serf-lan-port", strconv.Itoa(p.serfLAN), "-serf-wan-port", strconv.Itoa(p.serfWAN),
		"-server-port", strconv.Itoa(p.server),
		"-log-level", "warn")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	cmd.Stdout, cmd.Stderr = logf, logf // *os.File: no copying goroutines
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	a.cmd, a.exited = cmd, exited
	if err := waitForLeader(a.Addr(), 30*time.Second, exited); err != nil {
		a.Stop()
		return err
	}
	return nil
}

func (a *Agent) cleanup() {
	a.Stop()
	if a.t.Failed() {
		a.t.Logf("consultest: agent log tail:\n%s", a.logTail())
	}
}

func (a *Agent) logPath() string { return filepath.Join(a.dir, "consul.log") }

func (a *Agent) logTail() string {
	b, _ := os.ReadFile(a.logPath())
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// freePorts reserves four distinct loopback ports, TCP and (for serf) UDP
// free at the same time, then releases them for the agent to take.
func freePorts() (ports, error) {
	var closers []func() error
	defer func() {
		for _, c := range closers {
			_ = c()
		}
	}()
	pick := func(udp bool) (int, error) {
		for range 20 {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return 0, err
			}
			port := l.Addr().(*net.TCPAddr).Port
			if !udp {
				closers = append(closers, l.Close)
				return port, nil
			}
			u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				_ = l.Close()
				continue
			}
			closers = append(closers, l.Close, u.Close)
			return port, nil
		}
		return 0, fmt.Errorf("no port free for both TCP and UDP")
	}
	var p ports
	var err error
	if p.http, err = pick(false); err != nil {
		return p, err
	}
	if p.serfLAN, err = pick(true); err != nil {
		return p, err
	}
	if p.serfWAN, err = pick(true); err != nil {
		return p, err
	}
	if p.server, err = pick(false); err != nil {
		return p, err
	}
	return p, nil
}
