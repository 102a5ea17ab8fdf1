package ctl

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Child is a running child process under control.
type Child struct {
	Role string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	pipe *os.File
	log  *os.File

	mu        sync.Mutex // serialises Call
	exited    chan struct{}
	err       error
	closeOnce sync.Once
}

// Start runs this binary as role with cfg (JSON-encoded into the
// environment, with extraEnv added), logs its stdout and stderr to
// logPath, and waits up to timeout for its ready line, decoded into ready.
func Start(role string, cfg any, extraEnv []string, logPath string, timeout time.Duration, ready any) (*Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), EnvRole+"="+role, EnvConfig+"="+string(raw)), extraEnv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	in, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("ctl: start %s: %w", role, err)
	}
	w.Close()
	c := &Child{Role: role, cmd: cmd, in: in, out: bufio.NewReaderSize(r, 1<<16), pipe: r, log: logf, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	if err := c.await("ready", timeout, ready); err != nil {
		c.Kill()
		return nil, fmt.Errorf("ctl: %s not ready: %w (log %s)", role, err, logPath)
	}
	return c, nil
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Call sends cmd with arg and decodes the answer into res (may be nil),
// waiting at most timeout.
func (c *Child) Call(cmd string, arg any, res any, timeout time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	req := request{Cmd: cmd}
	if arg != nil {
		b, err := json.Marshal(arg)
		if err != nil {
			return err
		}
		req.Arg = b
	}
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := c.in.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("ctl: %s %s: %w", c.Role, cmd, err)
	}
	return c.await(cmd, timeout, res)
}

// await reads one answer line for cmd.
func (c *Child) await(cmd string, timeout time.Duration, res any) error {
	type result struct {
		line []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := c.out.ReadBytes('\n')
		ch <- result{line, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-time.After(timeout):
		return fmt.Errorf("ctl: %s %s: no answer within %v", c.Role, cmd, timeout)
	}
	if r.err != nil {
		return fmt.Errorf("ctl: %s %s: %w", c.Role, cmd, r.err)
	}
	var resp response
	if err := json.Unmarshal(r.line, &resp); err != nil {
		return fmt.Errorf("ctl: %s %s: bad answer %q: %w", c.Role, cmd, r.line, err)
	}
	if resp.Cmd != cmd {
		return fmt.Errorf("ctl: %s: answer to %q while waiting for %q", c.Role, resp.Cmd, cmd)
	}
	if resp.Err != "" {
		return fmt.Errorf("ctl: %s %s: %s", c.Role, cmd, resp.Err)
	}
	if res != nil && len(resp.Res) > 0 {
		return json.Unmarshal(resp.Res, res)
	}
	return nil
}

// Quit asks the child to stop and waits up to timeout for it to exit,
// then kills it.
func (c *Child) Quit(timeout time.Duration) error {
	err := c.Call("quit", nil, nil, timeout)
	_ = c.in.Close()
	select {
	case <-c.exited:
	case <-time.After(timeout):
		c.Kill()
		return errors.Join(err, fmt.Errorf("ctl: %s did not exit within %v", c.Role, timeout))
	}
	c.close()
	if err != nil {
		return err
	}
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		return fmt.Errorf("ctl: %s exited: %w", c.Role, c.err)
	}
	return nil
}

// Kill ends the child at once (nothing if it has exited).
func (c *Child) Kill() {
	select {
	case <-c.exited:
	default:
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	c.close()
}

func (c *Child) close() {
	c.closeOnce.Do(func() {
		c.pipe.Close()
		c.log.Close()
	})
}
