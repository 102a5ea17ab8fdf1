package testutil

import (
	"bytes"
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Chromium finds headless Chromium: $CHROMIUM, else chromium,
// chromium-browser or google-chrome on PATH. Without one the test skips,
// or fails under CI=true (make test installs it: scripts/chromium.sh).
func Chromium(t testing.TB) string {
	t.Helper()
	return Command(t, "CHROMIUM", "scripts/chromium.sh installs Debian's chromium", "chromium", "chromium-browser", "google-chrome")
}

// RunChromium runs headless Chromium once with args after the fixed
// flags, in a new empty profile, and returns its stdout. It is killed,
// with every process it started, if it runs past 60s.
func RunChromium(t testing.TB, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	flags := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + t.TempDir(),
	}
	cmd := exec.CommandContext(ctx, bin, append(flags, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\nstderr:\n%s", args, err, tail(stderr.Bytes(), 4000))
	}
	return stdout.Bytes()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
