package consultest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestAddrHelper is run by TestAddrSkipsOrFails in a child process.
func TestAddrHelper(t *testing.T) {
	if os.Getenv("CONSULTEST_CHILD") != "1" {
		t.Skip("run by TestAddrSkipsOrFails")
	}
	Addr(t)
}

// TestAddrSkipsOrFails: without CONSUL_HTTP_ADDR a Consul test skips with
// directions, unless CI=true, where it fails.
func TestAddrSkipsOrFails(t *testing.T) {
	run := func(ci string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAddrHelper$", "-test.v")
		cmd.Env = append(os.Environ(), "CONSULTEST_CHILD=1", EnvAddr+"=", "CI="+ci)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err != nil || !strings.Contains(out, "--- SKIP") || !strings.Contains(out, "scripts/consul.sh run -- go test ./...") {
		t.Fatalf("without CI: want a skip with directions, got err=%v\n%s", err, out)
	}
	out, err = run("true")
	if err == nil || !strings.Contains(out, "--- FAIL") || !strings.Contains(out, "CI=true") {
		t.Fatalf("with CI=true: want a failure, got err=%v\n%s", err, out)
	}
}
