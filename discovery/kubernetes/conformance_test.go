package kubernetes_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/discovery/discoverytest"
	k8sdisc "github.com/mailroom-go/mailroom/discovery/kubernetes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The shared conformance suite (discoverytest), the one Consul and etcd
// pass, against the real apiserver. Each suite node is a provider in this
// process on the RBAC of deploy/kubernetes, on a pod of its own that the
// test creates Running and Ready (the kubelet's part).
//
// Where the suite's picture differs from a pod's life:
//   - Freeze stops the renewer only, as the Consul and etcd harnesses
//     stop their refresh; the watcher keeps running. A whole process
//     frozen with SIGSTOP is TestFrozenAndRestarted.
//   - CrashAndRestart restarts the node in the same pod (a container
//     restart: same pod UID), so the new incarnation takes the lease over
//     and the old one is down as soon as the others see that, before its
//     TTL. A pod replaced by another (new UID, new address) is
//     TestFrozenAndRestarted.
//   - A node declared dead keeps its lease, unrenewed, until a new
//     incarnation takes it over or its pod goes: FrozenStaysRegistered.
//   - WatchResume's disruption restarts the apiserver: every watch and
//     connection is cut and every renewal fails meanwhile.

func TestConformanceDiscover(t *testing.T) { discoverytest.Discover(t, newEnv(t).harness()) }
func TestConformanceFrozenNode(t *testing.T) {
	discoverytest.FrozenNode(t, newEnv(t).harness())
}
func TestConformanceCrashAndRestart(t *testing.T) {
	discoverytest.CrashAndRestart(t, newEnv(t).harness())
}

// TestConformanceWatchResume: the apiserver restarts under the nodes;
// each relists, nobody is reported down, the watches carry on.
func TestConformanceWatchResume(t *testing.T) {
	discoverytest.WatchResume(t, newEnv(t).harness())
}

func (e *env) harness() discoverytest.Harness {
	return discoverytest.Harness{
		TTL:                   ttl,
		Refresh:               ttl / 3, // the default RenewEvery
		FrozenStaysRegistered: true,
		New: func(t *testing.T, name string) discoverytest.Provider {
			e.ensurePod(name)
			cfg := e.config(name)
			cfg.Logger = slog.New(slog.NewTextHandler(logWriter{t}, nil)).With("provider", name)
			p, err := k8sdisc.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var freeze gate
			k8sdisc.SetBeforeTick(p, freeze.wait)
			return discoverytest.Provider{Provider: p, Freeze: freeze.close, Thaw: freeze.open, Crash: func() { k8sdisc.SetCrash(p) }, Dead: p.Dead}
		},
		// Registered: a lease names the incarnation; alive while that
		// lease's renewal is within its duration.
		Registered: func(t testing.TB, m discovery.Member) (registered, alive bool) {
			l, err := e.admin.CoordinationV1().Leases(e.ns).Get(context.Background(), k8sdisc.DefaultLeasePrefix+m.Node, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, false
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != m.ID() {
				return false, false
			}
			alive = l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil &&
				time.Since(l.Spec.RenewTime.Time) < time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second
			return true, alive
		},
		Disrupt: func(t *testing.T, _ []*discoverytest.Node) { restartAPIServer(t) },
	}
}

// ensurePod creates the pod name, Running and Ready, unless it exists
// (CrashAndRestart restarts a node in its pod).
func (e *env) ensurePod(name string) {
	e.t.Helper()
	if _, err := e.admin.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
		return
	} else if !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	e.pod(name, true)
}

// restartAPIServer stops the test apiserver and starts it again on the
// same port and etcd; it returns once it serves.
func restartAPIServer(t *testing.T) {
	t.Helper()
	out, err := exec.Command(os.Getenv("MAILROOM_KUBE_SCRIPT"), "restart-apiserver", os.Getenv("MAILROOM_KUBE_DIR")).CombinedOutput()
	if err != nil {
		t.Fatalf("restarting the apiserver: %v: %s", err, out)
	}
}

// gate blocks the renewer while closed, as if the process were frozen.
type gate struct {
	mu     sync.Mutex // protects following
	resume chan struct{}
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.resume = make(chan struct{})
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resume != nil {
		close(g.resume)
		g.resume = nil
	}
}

func (g *gate) wait(ctx context.Context) {
	g.mu.Lock()
	ch := g.resume
	g.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
