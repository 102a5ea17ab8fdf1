package kubernetes_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	k8sdisc "github.com/mailroom-go/mailroom/discovery/kubernetes"
	"google.golang.org/protobuf/types/known/wrapperspb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// bound is how soon after a pod goes not ready or is deleted its
// incarnation is down and pinned calls fail: the watch latency, which
// the package doc promises is small; generous for a loaded machine.
const bound = 3 * time.Second

func call(w *watcher, node, fn string, d time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res, err := w.sys.Call(ctx, node, fn, wrapperspb.String(""))
	if err != nil {
		return "", err
	}
	return res.(*wrapperspb.StringValue).Value, nil
}

// Three nodes (OS processes, on the RBAC of deploy/) form one cluster
// from pod objects; a pod marked not ready, then one deleted, is
// MemberDown and the calls pinned to it fail within bound.
func TestThreeNodesNotReadyAndDeleted(t *testing.T) {
	e := newEnv(t)
	w := e.startWatcher("watcher")
	var kids []*child
	for _, name := range []string{"n-1", "n-2", "n-3"} {
		e.pod(name, true)
		kids = append(kids, e.startChild(name))
	}
	for _, c := range kids {
		eventually(t, 20*time.Second, c.name+" up at the watcher", func() bool {
			m, ok := w.member(c.name)
			return ok && m.Incarnation == c.inc && m.Addr == c.addr
		})
		got, err := call(w, c.name, "whoami", 5*time.Second)
		if err != nil || got != c.name+"/"+actor.FormatIncarnation(c.inc) {
			t.Fatalf("whoami on %s = %q, %v", c.name, got, err)
		}
	}
	// Each child sees the other three nodes: one cluster.
	for _, c := range kids {
		eventually(t, 20*time.Second, c.name+" sees everyone", func() bool {
			_, body := c.get("/members")
			return len(strings.Fields(body)) == 3
		})
	}
	for i, how := range []string{"not ready", "deleted"} {
		c := kids[i]
		failed := make(chan error, 1)
		go func() { _, err := call(w, c.name, "hang", time.Minute); failed <- err }()
		start := time.Now()
		if how == "not ready" {
			e.setReady(c.name, false)
		} else {
			e.deletePod(c.name)
		}
		select {
		case err := <-failed:
			if err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("pod %s: pinned call ended with %v, want the node-down failure", how, err)
			}
			t.Logf("pod %s: pinned call failed after %v: %v", how, time.Since(start).Round(time.Millisecond), err)
		case <-time.After(bound):
			t.Fatalf("pod %s: the pinned call still runs %v later", how, bound)
		}
		eventually(t, bound, "MemberDown of the pod "+how, func() bool {
			_, ok := w.downAt(c.name + "/" + actor.FormatIncarnation(c.inc))
			return ok
		})
		// The node learns it was declared dead and stops.
		c.exits(t, 10*time.Second, "pod "+how+": the node stops itself")
	}
}

// A node frozen with SIGSTOP stops renewing its lease and is reported
// down within the lease TTL + 1s; a restarted pod (new UID) is a new
// incarnation reached at its new address.
func TestFrozenAndRestarted(t *testing.T) {
	e := newEnv(t)
	w := e.startWatcher("watcher")
	e.pod("f-1", true)
	c := e.startChild("f-1")
	eventually(t, 20*time.Second, "f-1 up", func() bool { m, ok := w.member("f-1"); return ok && m.Incarnation == c.inc })
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	id := "f-1/" + actor.FormatIncarnation(c.inc)
	eventually(t, ttl+5*time.Second, "f-1 down", func() bool { _, ok := w.downAt(id); return ok })
	at, _ := w.downAt(id)
	took := at.Sub(frozen)
	t.Logf("frozen node reported down after %v (TTL %v)", took.Round(time.Millisecond), ttl)
	if took > ttl+time.Second {
		t.Fatalf("frozen node reported down after %v, want within TTL %v + 1s", took, ttl)
	}
	// Thawed, it finds itself declared dead and stops.
	_ = c.cmd.Process.Signal(syscall.SIGCONT)
	c.exits(t, 15*time.Second, "the thawed node stops itself")
	// The pod is replaced: same name, new UID, a new process.
	e.deletePod("f-1")
	e.pod("f-1", true)
	c2 := e.startChild("f-1")
	if c2.inc == c.inc || c2.addr == c.addr {
		t.Fatalf("restart kept incarnation %x or address %s", c.inc, c.addr)
	}
	eventually(t, 20*time.Second, "the new incarnation up", func() bool {
		m, ok := w.member("f-1")
		return ok && m.Incarnation == c2.inc && m.Addr == c2.addr
	})
	got, err := call(w, "f-1", "whoami", 5*time.Second)
	if err != nil || got != "f-1/"+actor.FormatIncarnation(c2.inc) {
		t.Fatalf("whoami after restart = %q, %v", got, err)
	}
}

// The GoAkt #1265 case: three pods start not ready, and the test's
// "kubelet" marks a pod ready only once its node's /readyz says so. Since
// readiness never waits on peers, all three turn ready and form one
// cluster, not three.
func TestColdStartReadinessGated(t *testing.T) {
	e := newEnv(t)
	var kids []*child
	for _, name := range []string{"c-1", "c-2", "c-3"} {
		e.pod(name, false)
	}
	for _, name := range []string{"c-1", "c-2", "c-3"} {
		kids = append(kids, e.startChild(name))
	}
	for _, c := range kids {
		eventually(t, 20*time.Second, c.name+" /readyz", func() bool { code, _ := c.get("/readyz"); return code == 200 })
		e.setReady(c.name, true)
	}
	var want string
	for _, c := range kids {
		eventually(t, 20*time.Second, c.name+" sees the other two", func() bool {
			_, body := c.get("/members")
			return len(strings.Fields(body)) == 2
		})
		_, body := c.get("/members")
		ids := append(strings.Fields(body), c.name+"/"+actor.FormatIncarnation(c.inc))
		slices.Sort(ids)
		body = strings.Join(ids, " ")
		if want == "" {
			want = body
		} else if body != want {
			t.Fatalf("split: %s sees %q, another sees %q", c.name, body, want)
		}
	}
}

// The watch survives an apiserver restart: it relists, nobody is
// reported down meanwhile (the apiserver keeps its watches open while it
// shuts down and refuses requests: the nodes' own renewals stop showing,
// so their views are blind and expire nobody), and changes made after the
// restart are seen.
func TestWatchSurvivesAPIServerRestart(t *testing.T) {
	e := newEnv(t)
	w := e.startWatcher("watcher")
	e.pod("r-1", true)
	c := e.startChild("r-1")
	eventually(t, 20*time.Second, "r-1 up", func() bool { m, ok := w.member("r-1"); return ok && m.Incarnation == c.inc })
	restartAPIServer(t)
	if _, ok := w.downAt("r-1/" + actor.FormatIncarnation(c.inc)); ok {
		t.Fatal("r-1 reported down across the apiserver restart")
	}
	e.pod("r-2", true)
	c2 := e.startChild("r-2")
	eventually(t, 30*time.Second, "r-2 up after the restart", func() bool { m, ok := w.member("r-2"); return ok && m.Incarnation == c2.inc })
	// Neither the watcher nor r-1 took the outage for deaths.
	if m, ok := w.member("r-1"); !ok || m.Incarnation != c.inc {
		t.Fatalf("r-1 is not up at the watcher after the restart: %v %v", m, ok)
	}
	select {
	case <-c.done:
		t.Fatal("r-1 stopped itself across the apiserver restart")
	case <-w.sys.Done():
		t.Fatal("the watcher stopped itself across the apiserver restart")
	default:
	}
	eventually(t, 20*time.Second, "r-1 sees r-2", func() bool {
		_, body := c.get("/members")
		return strings.Contains(body, "r-2/"+actor.FormatIncarnation(c2.inc))
	})
	e.deletePod("r-1")
	eventually(t, 10*time.Second, "r-1 down after the restart", func() bool {
		_, ok := w.downAt("r-1/" + actor.FormatIncarnation(c.inc))
		return ok
	})
}

// A provider whose service account lacks the Role fails at Start with an
// error naming the missing permission.
func TestRBACDenied(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.admin.CoreV1().ServiceAccounts(e.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.pod("d-1", true)
	cfg := e.config("d-1")
	cfg.Kubeconfig = e.tokenKubeconfig("nobody")
	p, err := k8sdisc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Start(ctx, discovery.Member{Node: "d-1", Incarnation: 1, Addr: "127.0.0.1:1"}, func(discovery.Event) {})
	if err == nil || !strings.Contains(err.Error(), `missing RBAC permission "get" on pods`) || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("Start = %v, want an error naming the missing permission", err)
	}
	_ = p.Stop(ctx)

	// Pods readable but leases not: the error names leases.
	if _, err := e.admin.RbacV1().Roles(e.ns).Create(ctx, podReader(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.RbacV1().RoleBindings(e.ns).Create(ctx, podReaderBinding(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, _ = k8sdisc.New(cfg)
	eventually(t, 10*time.Second, "the lease error", func() bool {
		err = p.Start(ctx, discovery.Member{Node: "d-1", Incarnation: 1, Addr: "127.0.0.1:1"}, func(discovery.Event) {})
		return err != nil && strings.Contains(err.Error(), "leases.coordination.k8s.io")
	})
	if !strings.Contains(err.Error(), "missing RBAC permission") {
		t.Fatalf("Start = %v, want the missing lease permission named", err)
	}
	_ = p.Stop(ctx)
}
