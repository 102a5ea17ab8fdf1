package kubernetes_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestShopOnKubernetes runs examples/shop as deploy/kubernetes/shop.yaml
// runs it, against the real apiserver: each node an OS process with its
// Deployment's env (the downward API and the cookie Secret filled in as
// the kubelet would), SHOP_DISCOVERY=kubernetes through a kubeconfig
// holding the token of the service account that deploy/'s Role binds.
// The test plays the kubelet: it creates the pods, marks stock and orders
// Ready (they have no readiness probe) and each api Ready once its
// readiness probe's path answers 200. Two api nodes run (named after
// their pods: the manifest runs one; two let one keep serving while the
// other drains).
//
// Then it deletes one api's pod with the manifest's grace period, as
// kubectl would (the pod is terminating), and sends that process SIGTERM
// (the kubelet does after preStop) while an order is held in it. It
// checks the drain: readiness 503, a new order refused with 503 (not
// executed), the held order answered 200, the process exiting 0 within
// SHOP_DRAIN_TIMEOUT and within terminationGracePeriodSeconds minus
// preStop, its lease deleted; and the other api answering every order
// meanwhile.
func TestShopOnKubernetes(t *testing.T) {
	e := newEnv(t)
	bin := buildShop(t)
	deps := map[string]*appsv1.Deployment{}
	for _, obj := range decodeFile(t, "shop.yaml") {
		if d, ok := obj.(*appsv1.Deployment); ok {
			deps[d.Spec.Template.Labels["role"]] = d
		}
	}
	for _, role := range []string{"stock", "orders", "api"} {
		if deps[role] == nil {
			t.Fatalf("shop.yaml has no Deployment for role %s", role)
		}
	}
	cookie := "shop-k8s-test-cookie-0123456789abcdef"
	if _, err := e.admin.CoreV1().Secrets(e.ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-cookie"},
		StringData: map[string]string{"cookie": cookie},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		if t.Failed() {
			e.dumpObjects(t)
		}
	})
	stock := e.startShop(t, bin, deps["stock"], "shop-stock", false)
	orders := e.startShop(t, bin, deps["orders"], "shop-orders", false)
	api1 := e.startShop(t, bin, deps["api"], "shop-api-1", true)
	api2 := e.startShop(t, bin, deps["api"], "shop-api-2", true)
	_, _ = stock, orders

	// One cluster: each api places an order through orders and stock,
	// found through the apiserver only.
	// The bound is generous: four processes under -race find each other
	// through the apiserver on a machine that may be running much else.
	for _, a := range []*shopNode{api1, api2} {
		last := ""
		eventually(t, 60*time.Second, a.pod+" places an order", func() bool {
			code, body := a.order("first-"+a.pod, "")
			// The answer without its figures (attempts and times change
			// every try).
			got := fmt.Sprintf("%d %s", code, strings.TrimSpace(body))
			if i := strings.Index(got, " ["); i > 0 {
				got = got[:i]
			}
			if code != http.StatusOK && got != last {
				last = got
				t.Logf("%s: an order answered %s", a.pod, got) // each distinct answer once: why it did not work yet
			}
			return code == http.StatusOK
		})
	}

	// The other api serves throughout the drain: every order answers 200.
	stopLoad := make(chan struct{})
	loadDone := make(chan error, 1)
	served := 0
	go func() {
		pace := time.NewTicker(20 * time.Millisecond) // 50 orders/s
		defer pace.Stop()
		for i := 0; ; i++ {
			select {
			case <-stopLoad:
				loadDone <- nil
				return
			case <-pace.C:
			}
			if code, body := api2.order(fmt.Sprintf("load-%d", i), ""); code != http.StatusOK {
				loadDone <- fmt.Errorf("order %d on %s during the drain: %d %s", i, api2.pod, code, body)
				return
			}
			served++
		}
	}()

	held := make(chan string, 1)
	go func() {
		code, body := api1.order("held", "4s")
		held <- fmt.Sprintf("%d %s", code, strings.TrimSpace(body))
	}()
	eventually(t, 10*time.Second, "the held order in flight", func() bool {
		_, body := api1.get("/inflight")
		return strings.TrimSpace(body) == "1"
	})

	// kubectl delete: the pod is terminating for its grace period; the
	// kubelet runs preStop (skipped: it only waits), then SIGTERM.
	spec := deps["api"].Spec.Template.Spec
	grace := *spec.TerminationGracePeriodSeconds
	preStop := time.Duration(spec.Containers[0].Lifecycle.PreStop.Sleep.Seconds) * time.Second
	drainTimeout, err := time.ParseDuration(envOf(spec.Containers[0], "SHOP_DRAIN_TIMEOUT"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.admin.CoreV1().Pods(e.ns).Delete(context.Background(), api1.pod, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	sigterm := time.Now()
	if err := api1.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, api1.pod+" /readyz 503 while draining", func() bool {
		code, _ := api1.get("/readyz")
		return code == http.StatusServiceUnavailable
	})
	e.setReady(api1.pod, false) // the kubelet's readiness probe failed
	// Readiness turns 503 as the node starts draining, a moment before
	// the api refuses orders: one placed in between is taken (200).
	late := 0
	eventually(t, 2*time.Second, "a new order on the draining api refused", func() bool {
		late++
		code, body := api1.order(fmt.Sprintf("late-%d", late), "")
		if code != http.StatusOK && code != http.StatusServiceUnavailable {
			t.Fatalf("a new order on the draining api: %d %s, want 503 (not executed)", code, body)
		}
		return code == http.StatusServiceUnavailable
	})
	select {
	case got := <-held:
		if !strings.HasPrefix(got, "200 ") {
			t.Fatalf("the held order: %s, want 200", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held order got no answer")
	}
	budget := min(drainTimeout, time.Duration(grace)*time.Second-preStop)
	select {
	case <-api1.done:
	case <-time.After(budget + 5*time.Second):
		t.Fatalf("%s still runs %v after SIGTERM (drain timeout %v, grace %ds, preStop %v)", api1.pod, budget+5*time.Second, drainTimeout, grace, preStop)
	}
	took := time.Since(sigterm)
	if code := api1.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("%s exited %d after SIGTERM: %s", api1.pod, code, api1.stderr.String())
	}
	if took > budget {
		t.Fatalf("%s drained in %v, more than %v", api1.pod, took, budget)
	}
	t.Logf("%s drained and exited %v after SIGTERM (budget %v: SHOP_DRAIN_TIMEOUT %v, grace %ds - preStop %v)", api1.pod, took.Round(time.Millisecond), budget, drainTimeout, grace, preStop)
	if _, err := e.admin.CoordinationV1().Leases(e.ns).Get(context.Background(), "mailroom-"+api1.pod, metav1.GetOptions{}); err == nil {
		t.Fatalf("%s's lease outlived its process", api1.pod)
	}
	e.deletePod(api1.pod) // the kubelet confirms the container is gone

	// The other api kept serving, and still does.
	if code, body := api2.order("after", ""); code != http.StatusOK {
		t.Fatalf("%s after the drain: %d %s", api2.pod, code, body)
	}
	close(stopLoad)
	if err := <-loadDone; err != nil {
		t.Fatal(err)
	}
	t.Logf("%s answered %d orders during the drain, all 200", api2.pod, served)
	if served == 0 {
		t.Fatalf("%s answered no order during the drain", api2.pod)
	}
}

// buildShop builds examples/shop (its own module) into the test's temp
// directory.
func buildShop(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "shop")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("..", "..", "examples", "shop")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building examples/shop: %v: %s", err, out)
	}
	return bin
}

// shopNode is one shop process on its pod.
type shopNode struct {
	pod, http string
	cmd       *exec.Cmd
	stderr    *syncBuffer
	done      chan struct{}
}

// startShop creates pod with dep's template labels and runs the shop as
// dep's container would run in it: its env, the downward API and the
// Secret filled in, each 0.0.0.0 address made a free loopback port. An
// api pod turns Ready once its readiness probe's path answers 200.
func (e *env) startShop(t *testing.T, bin string, dep *appsv1.Deployment, pod string, api bool) *shopNode {
	t.Helper()
	ctx := context.Background()
	tpl := dep.Spec.Template
	c := tpl.Spec.Containers[0]
	p, err := e.admin.CoreV1().Pods(e.ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Labels: tpl.Labels},
		// Bound to a node, as the scheduler leaves it: the apiserver
		// deletes an unbound pod at once, with no grace period.
		Spec: corev1.PodSpec{NodeName: "test-kubelet", ServiceAccountName: tpl.Spec.ServiceAccountName, Containers: []corev1.Container{{Name: c.Name, Image: c.Image}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.setReady(p.Name, tpl.Spec.Containers[0].ReadinessProbe == nil)

	n := &shopNode{pod: pod, stderr: &syncBuffer{}, done: make(chan struct{})}
	environ := append(os.Environ(), "KUBECONFIG="+e.saConfig, "SHOP_LOG=1")
	for _, ev := range c.Env {
		v := ev.Value
		switch {
		case ev.ValueFrom == nil && strings.HasPrefix(v, "0.0.0.0:"):
			v = freeLoopback(t)
			if ev.Name == "SHOP_HTTP" {
				n.http = v
			}
		case ev.ValueFrom == nil:
		case ev.ValueFrom.FieldRef != nil:
			v = map[string]string{"metadata.name": pod, "metadata.namespace": e.ns, "status.podIP": "127.0.0.1"}[ev.ValueFrom.FieldRef.FieldPath]
			if v == "" {
				t.Fatalf("%s: env %s: the test does not fill fieldRef %s", pod, ev.Name, ev.ValueFrom.FieldRef.FieldPath)
			}
		case ev.ValueFrom.SecretKeyRef != nil:
			s, err := e.admin.CoreV1().Secrets(e.ns).Get(ctx, ev.ValueFrom.SecretKeyRef.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s: env %s: %v", pod, ev.Name, err)
			}
			v = string(s.Data[ev.ValueFrom.SecretKeyRef.Key])
		default:
			t.Fatalf("%s: env %s: the test does not fill %+v", pod, ev.Name, ev.ValueFrom)
		}
		environ = append(environ, ev.Name+"="+v)
	}
	if api {
		environ = append(environ, "SHOP_NAME="+pod)
	}
	// The runtime's warnings on stderr, shown when the test fails.
	environ = append(environ, "SHOP_LOG=1")
	n.cmd = exec.Command(bin)
	n.cmd.Env = environ
	n.cmd.Stderr = n.stderr
	out, err := n.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			ready <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() { _ = n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		if t.Failed() {
			// Its goroutines on stderr (Go's SIGQUIT dump), then gone.
			_ = n.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-n.done:
			case <-time.After(5 * time.Second):
			}
		}
		_ = n.cmd.Process.Kill()
		<-n.done
		if t.Failed() || os.Getenv("MAILROOM_TEST_SHOP_STDERR") != "" {
			t.Logf("%s stderr:\n%s", pod, n.stderr.String())
		}
	})
	select {
	case l := <-ready:
		if l != "ready" {
			t.Fatalf("%s said %q: %s", pod, l, n.stderr.String())
		}
	case <-n.done:
		t.Fatalf("%s exited: %s", pod, n.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start: %s", pod, n.stderr.String())
	}
	if probe := c.ReadinessProbe; probe != nil {
		eventually(t, 20*time.Second, pod+" "+probe.HTTPGet.Path+" 200", func() bool {
			code, _ := n.get(probe.HTTPGet.Path)
			return code == http.StatusOK
		})
		e.setReady(pod, true)
	}
	return n
}

func (n *shopNode) get(path string) (int, string) {
	return n.do(http.MethodGet, path)
}

// order places an order of a lamp; hold makes the api wait that long
// first (a slow order to drain).
func (n *shopNode) order(id, hold string) (int, string) {
	path := "/order?item=lamp&id=" + id
	if hold != "" {
		path += "&hold=" + hold
	}
	return n.do(http.MethodPost, path)
}

func (n *shopNode) do(method, path string) (int, string) {
	req, err := http.NewRequest(method, "http://"+n.http+path, nil)
	if err != nil {
		return 0, err.Error()
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func envOf(c corev1.Container, name string) string {
	for _, ev := range c.Env {
		if ev.Name == name {
			return ev.Value
		}
	}
	return ""
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer is a bytes.Buffer safe for the exec copier and the test.
type syncBuffer struct {
	mu sync.Mutex // protects following
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

// dumpObjects logs the pods (phase, readiness, deletion) and the leases
// (holder, renewal) the nodes see, for a failed test.
func (e *env) dumpObjects(t *testing.T) {
	ctx := context.Background()
	pods, err := e.admin.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("pods: %v", err)
	} else {
		for _, p := range pods.Items {
			ready := "?"
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady {
					ready = string(c.Status)
				}
			}
			t.Logf("pod %s uid=%s phase=%s ready=%s ip=%s deleting=%v labels=%v", p.Name, p.UID, p.Status.Phase, ready, p.Status.PodIP, p.DeletionTimestamp != nil, p.Labels)
		}
	}
	leases, err := e.admin.CoordinationV1().Leases(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("leases: %v", err)
		return
	}
	for _, l := range leases.Items {
		holder, renew := "", ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		if l.Spec.RenewTime != nil {
			renew = l.Spec.RenewTime.String()
		}
		t.Logf("lease %s holder=%s renew=%s annotations=%v", l.Name, holder, renew, l.Annotations)
	}
}
