package discovery_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A real dnsmasq for the DNS provider's tests. scripts/dnsmasq.sh runs one
// (MAILROOM_DNS_SERVER, with the hosts directory MAILROOM_DNS_HOSTSDIR it
// reads through inotify) and exports its binary (MAILROOM_DNSMASQ), with
// which a test runs its own: SRV records come from --srv-host, which
// dnsmasq 2.90 reads only at start, so changing them restarts it, on the
// same port. Outside CI the tests skip without them; under CI=true they
// fail.

// dnsZone is the domain the test servers hold (--local: no upstream, a
// name in it they do not hold is NXDOMAIN).
const dnsZone = "mailroom.test"

// dnsEnv returns the variable name's value, skipping (or failing, under
// CI) when it is unset.
func dnsEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is unset under CI: run the test under scripts/dnsmasq.sh run -- ...", name)
		}
		t.Skipf("%s is unset: run under scripts/dnsmasq.sh run -- go test ... (make test does)", name)
	}
	return v
}

// srvRecord is one SRV record and the A record of its host.
type srvRecord struct {
	host string // the label under the zone: "a" is a.<zone>
	ip   string
	port int
}

// dnsServer is a dnsmasq this test runs, serving the SRV name srvName.
type dnsServer struct {
	t       *testing.T
	bin     string
	conf    string
	addr    string // 127.0.0.1:port, kept across restarts
	srvName string

	mu     sync.Mutex // protects following
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd exited
}

// startDNSServer starts a dnsmasq on a free loopback port with the SRV
// records given (none: the name is NXDOMAIN); it stops with the test.
func startDNSServer(t *testing.T, records ...srvRecord) *dnsServer {
	t.Helper()
	s := &dnsServer{
		t: t, bin: dnsEnv(t, "MAILROOM_DNSMASQ"), conf: filepath.Join(t.TempDir(), "dnsmasq.conf"),
		srvName: fmt.Sprintf("_mailroom._tcp.svc%d.%s", time.Now().UnixNano()%1e6, dnsZone),
	}
	t.Cleanup(s.Stop)
	var lastErr error
	for range 5 { // a free port may be taken before dnsmasq binds it
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		s.addr = pc.LocalAddr().String()
		pc.Close()
		s.write(records)
		if lastErr = s.start(); lastErr == nil {
			return s
		}
	}
	t.Fatalf("dnsmasq did not start: %v", lastErr)
	return nil
}

func (s *dnsServer) write(records []srvRecord) {
	var b strings.Builder
	for _, r := range records {
		host := r.host + "." + dnsZone
		fmt.Fprintf(&b, "srv-host=%s,%s,%d,0,0\nhost-record=%s,%s\n", s.srvName, host, r.port, host, r.ip)
	}
	require.NoError(s.t, os.WriteFile(s.conf, []byte(b.String()), 0o644))
}

// start runs dnsmasq and waits until it answers (its port bound).
func (s *dnsServer) start() error {
	_, port, _ := net.SplitHostPort(s.addr)
	cmd := exec.Command(s.bin, "--keep-in-foreground", "--conf-file="+s.conf, "--no-resolv", "--no-hosts",
		"--no-poll", "--bind-interfaces", "--listen-address=127.0.0.1", "--port="+port, "--user=root",
		"--pid-file=", "--local=/"+dnsZone+"/", "--log-facility=-")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			return fmt.Errorf("dnsmasq exited: %s", out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
			c.Close()
			s.mu.Lock()
			s.cmd, s.exited = cmd, exited
			s.mu.Unlock()
			return nil
		}
	}
	_ = cmd.Process.Kill()
	<-exited
	return fmt.Errorf("dnsmasq did not listen on %s in 10 s: %s", s.addr, out.String())
}

// Stop stops dnsmasq and waits for it to exit. Idempotent.
func (s *dnsServer) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Set replaces the SRV records and restarts dnsmasq on its port.
func (s *dnsServer) Set(records ...srvRecord) {
	s.t.Helper()
	s.Stop()
	s.write(records)
	require.NoError(s.t, s.start())
}

// Start starts a stopped server again, with the records it had.
func (s *dnsServer) Start() {
	s.t.Helper()
	require.NoError(s.t, s.start())
}

type lockedBuffer struct {
	mu sync.Mutex // protects b
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 64<<10 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// portOf is the port of host:port.
func portOf(t testing.TB, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}
