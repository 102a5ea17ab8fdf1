package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

// Deadline is how long Eventually polls before it fails the test.
const Deadline = 30 * time.Second

// Eventually polls cond every few milliseconds until it holds, and fails
// the test naming what it waited for if Deadline passes first. Tests
// synchronise with it instead of sleeping.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(Deadline)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", Deadline, what)
		case <-tick.C:
		}
	}
}

// LogBuffer is a concurrency-safe io.Writer for asserting on log output.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String is everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestWriter sends each write to t.Log (shown on failure or with -v).
type TestWriter struct{ T testing.TB }

func (w TestWriter) Write(p []byte) (int, error) {
	w.T.Helper()
	w.T.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// Marshal encodes a message on its own, as a payload travels: its full
// protobuf type name and its bytes. For tests that build frames by hand
// (the runtime encodes in place).
func Marshal(m proto.Message) (typ string, b []byte, err error) {
	b, err = proto.Marshal(m)
	if err != nil {
		return "", nil, err
	}
	return string(m.ProtoReflect().Descriptor().FullName()), b, nil
}

// Command finds a tool a test runs: the command in $env, else the first
// of names on PATH. Without one the test skips, or fails under CI=true
// (make test installs what it needs), saying hint.
func Command(t testing.TB, env, hint string, names ...string) string {
	t.Helper()
	for _, c := range append([]string{os.Getenv(env)}, names...) {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("none of %v on PATH and $%s unset: %s", names, env, hint)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
