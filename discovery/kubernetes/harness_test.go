package kubernetes_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	k8sdisc "github.com/mailroom-go/mailroom/discovery/kubernetes"
	"github.com/mailroom-go/mailroom/health"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	envChild = "MAILROOM_K8S_CHILD"
	cookie   = "k8s-test-cookie-0123456789abcdef"
	ttl      = 2 * time.Second
	selector = "app=mailroom-test"
)

func TestMain(m *testing.M) {
	if raw := os.Getenv(envChild); raw != "" {
		os.Exit(runChild(raw))
	}
	os.Exit(m.Run())
}

// env is one test's namespace on the real apiserver.
type env struct {
	t     *testing.T
	admin *kubernetes.Clientset
	ns    string
	// saConfig is a kubeconfig for the namespace's "mailroom" service
	// account, bound to deploy/kubernetes/rbac.yaml.
	saConfig string
}

func adminClient(t *testing.T) *kubernetes.Clientset {
	kc := os.Getenv("KUBECONFIG")
	if os.Getenv("MAILROOM_KUBE_DIR") == "" || kc == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no kube-apiserver: run under scripts/kube-apiserver.sh run -- (make test-kubernetes)")
		}
		t.Skip("no kube-apiserver: run under scripts/kube-apiserver.sh run -- go test ./... (make test-kubernetes)")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, admin: adminClient(t)}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	e.ns = "t-" + hex.EncodeToString(b)
	ctx := context.Background()
	if _, err := e.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.admin.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{}) })
	for _, obj := range decodeFile(t, "rbac.yaml") {
		create(t, e.admin, e.ns, obj, false)
	}
	e.saConfig = e.tokenKubeconfig("mailroom")
	// The RBAC authorizer learns new bindings from a watch: wait for it.
	rc, err := clientcmd.BuildConfigFromFlags("", e.saConfig)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the Role in effect", func() bool {
		_, err := sa.CoordinationV1().Leases(e.ns).List(ctx, metav1.ListOptions{})
		return err == nil
	})
	return e
}

// decodeFile decodes a manifest of deploy/kubernetes into typed objects.
func decodeFile(t *testing.T, name string) []runtime.Object {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kubernetes", name))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []runtime.Object
	for {
		var doc runtime.RawExtension
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(bytes.TrimSpace(doc.Raw)) == 0 || string(bytes.TrimSpace(doc.Raw)) == "null" {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc.Raw, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, obj)
	}
}

// create creates obj in ns (a server-side dry run when dry); the API's
// validation and admission decide.
func create(t *testing.T, c *kubernetes.Clientset, ns string, obj runtime.Object, dry bool) {
	t.Helper()
	ctx := context.Background()
	opts := metav1.CreateOptions{}
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var err error
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		_, err = c.CoreV1().ServiceAccounts(ns).Create(ctx, o, opts)
	case *corev1.Service:
		_, err = c.CoreV1().Services(ns).Create(ctx, o, opts)
	case *rbacv1.Role:
		_, err = c.RbacV1().Roles(ns).Create(ctx, o, opts)
	case *rbacv1.RoleBinding:
		_, err = c.RbacV1().RoleBindings(ns).Create(ctx, o, opts)
	default:
		err = createOther(ctx, c, ns, obj, opts)
	}
	if err != nil {
		t.Fatalf("creating %T: %v", obj, err)
	}
}

// tokenKubeconfig writes a kubeconfig that authenticates as service
// account sa of the namespace, with a token from the TokenRequest API.
func (e *env) tokenKubeconfig(sa string) string {
	t := e.t
	tr, err := e.admin.CoreV1().ServiceAccounts(e.ns).CreateToken(context.Background(), sa, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.AuthInfos {
		u.Token = tr.Status.Token
	}
	for _, c := range cfg.Contexts {
		c.Namespace = e.ns
	}
	path := filepath.Join(t.TempDir(), sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// pod creates a pod object as the scheduler and kubelet would leave it:
// Running, with the given readiness.
func (e *env) pod(name string, ready bool) *corev1.Pod {
	e.t.Helper()
	ctx := context.Background()
	p, err := e.admin.CoreV1().Pods(e.ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "mailroom-test"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "mailroom-test"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.setReady(p.Name, ready)
}

// setReady plays the kubelet: phase Running, condition Ready.
func (e *env) setReady(name string, ready bool) *corev1.Pod {
	e.t.Helper()
	ctx := context.Background()
	p, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = "127.0.0.1"
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.Now()}}
	p, err = e.admin.CoreV1().Pods(e.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) deletePod(name string) {
	e.t.Helper()
	zero := int64(0)
	if err := e.admin.CoreV1().Pods(e.ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) config(pod string) k8sdisc.Config {
	return k8sdisc.Config{Namespace: e.ns, LabelSelector: selector, PodName: pod, Kubeconfig: e.saConfig, LeaseTTL: ttl, BackoffMin: 50 * time.Millisecond, BackoffMax: 500 * time.Millisecond}
}

// watcher is an in-process node that records what discovery tells it.
type watcher struct {
	sys  *actor.System
	node *remote.Node
	mu   sync.Mutex // protects following
	up   map[string]discovery.Member
	down map[string]time.Time // by Member.ID
}

func (e *env) startWatcher(name string) *watcher {
	e.t.Helper()
	e.pod(name, true)
	w := &watcher{up: map[string]discovery.Member{}, down: map[string]time.Time{}}
	sys, err := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
	if err != nil {
		e.t.Fatal(err)
	}
	_ = sys.RegisterTypes(&wrapperspb.StringValue{})
	p, err := k8sdisc.New(e.config(name))
	if err != nil {
		e.t.Fatal(err)
	}
	n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: cookie, Listen: "127.0.0.1:0", Discovery: p})
	if err != nil {
		sys.Stop(context.Background())
		e.t.Fatal(err)
	}
	n.AddHooks(remote.Hooks{OnMember: func(ev discovery.Event) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch ev.Type {
		case discovery.MemberUp, discovery.MemberUpdated:
			w.up[ev.Member.Node] = ev.Member
		case discovery.MemberDown:
			if w.up[ev.Member.Node].Incarnation == ev.Member.Incarnation {
				delete(w.up, ev.Member.Node)
			}
			w.down[ev.Member.ID()] = time.Now()
		}
	}})
	w.sys, w.node = sys, n
	e.t.Cleanup(func() { sys.Stop(context.Background()) })
	return w
}

func (w *watcher) member(node string) (discovery.Member, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, ok := w.up[node]
	return m, ok
}

func (w *watcher) downAt(id string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.down[id]
	return at, ok
}

// eventually polls cond until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// child is a mailroom node in its own OS process.
type child struct {
	name, addr, http string
	inc              uint64
	cmd              *exec.Cmd
	done             chan struct{}
	// stderr is the child's log; read it only once done is closed.
	stderr *bytes.Buffer
}

type childOpts struct {
	Name, Pod, Namespace, Kubeconfig string
}

func (e *env) startChild(name string) *child {
	e.t.Helper()
	c, err := e.tryChild(name)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) tryChild(name string) (*child, error) { return e.childVia(name, e.saConfig) }

// childVia starts a child whose provider uses the kubeconfig at kc.
func (e *env) childVia(name, kc string) (*child, error) {
	raw, _ := json.Marshal(childOpts{Name: name, Pod: name, Namespace: e.ns, Kubeconfig: kc})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+string(raw))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{}), stderr: stderr}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case line <- sc.Text():
			default:
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(c.done) }()
	e.t.Cleanup(func() { c.kill() })
	select {
	case l := <-line:
		if _, err := fmt.Sscanf(l, "UP %s %s %x", &c.addr, &c.http, &c.inc); err != nil {
			return nil, fmt.Errorf("child %s said %q: %v", name, l, err)
		}
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("child %s exited: %s", name, stderr.String())
	case <-time.After(30 * time.Second):
		c.kill()
		return nil, fmt.Errorf("child %s did not start: %s", name, stderr.String())
	}
}

// exits waits up to within for the child to exit by itself. If it does
// not, it is made to dump its goroutines (SIGQUIT) and the test fails with
// that and its log: a node that should have stopped and hangs says where.
func (c *child) exits(t *testing.T, within time.Duration, what string) {
	t.Helper()
	select {
	case <-c.done:
		return
	case <-time.After(within):
	}
	_ = c.cmd.Process.Signal(syscall.SIGCONT)
	_ = c.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.kill()
	}
	t.Fatalf("%s: %s did not exit within %v; its log and goroutines:\n%s", what, c.name, within, c.stderr.String())
}

func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGCONT)
	_ = c.cmd.Process.Kill()
	<-c.done
}

func (c *child) get(path string) (int, string) {
	resp, err := http.Get("http://" + c.http + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// runChild is the child process: a node on the provider, a "whoami" and
// a "hang" function, probes and a /members page on HTTP.
func runChild(raw string) int {
	var o childOpts
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// The child's log (the runtime's and the provider's, Info and up)
	// goes to stderr, which a failing test prints (child.exits).
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	sys, err := actor.Start(actor.Config{Name: o.Name, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_ = sys.RegisterTypes(&wrapperspb.StringValue{})
	_ = sys.Register("whoami", func(ctx context.Context, _ proto.Message) (proto.Message, error) {
		return wrapperspb.String(o.Name + "/" + actor.FormatIncarnation(sys.Incarnation())), nil
	})
	_ = sys.Register("hang", func(ctx context.Context, _ proto.Message) (proto.Message, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	p, err := k8sdisc.New(k8sdisc.Config{Logger: log, Namespace: o.Namespace, LabelSelector: selector, PodName: o.Pod, Kubeconfig: o.Kubeconfig, LeaseTTL: ttl, BackoffMin: 50 * time.Millisecond, BackoffMax: 500 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var mu sync.Mutex
	up := map[string]string{}
	rec := &recorder{Provider: p}
	n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: cookie, Listen: "127.0.0.1:0", Discovery: rec})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	rec.set(func(ev discovery.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Type == discovery.MemberDown {
			if up[ev.Member.Node] == ev.Member.ID() {
				delete(up, ev.Member.Node)
			}
			return
		}
		if ev.Member.Node != o.Name {
			up[ev.Member.Node] = ev.Member.ID()
		}
	})
	probe, err := health.New(n, health.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	mux := http.NewServeMux()
	mux.Handle("/", probe.Handler())
	// /call?node=x calls x's whoami: the test makes the node dial a peer.
	mux.HandleFunc("GET /call", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		res, err := sys.Call(ctx, r.URL.Query().Get("node"), "whoami", wrapperspb.String(""))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		fmt.Fprint(w, res.(*wrapperspb.StringValue).Value)
	})
	mux.HandleFunc("GET /members", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var ids []string
		for _, id := range up {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		fmt.Fprint(w, strings.Join(ids, " "))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	go func() { _ = http.Serve(ln, mux) }()
	fmt.Printf("UP %s %s %016x\n", n.Addr(), ln.Addr(), sys.Incarnation())
	<-sys.Done()
	return 0
}

// recorder sees every event the provider delivers, from the first: a
// hook added after remote.Start would miss those of Start itself.
type recorder struct {
	discovery.Provider
	mu     sync.Mutex // protects following
	f      func(discovery.Event)
	missed []discovery.Event
}

func (r *recorder) Start(ctx context.Context, self discovery.Member, notify func(discovery.Event)) error {
	return r.Provider.Start(ctx, self, func(ev discovery.Event) {
		r.mu.Lock()
		if r.f == nil {
			r.missed = append(r.missed, ev)
		} else {
			r.f(ev)
		}
		r.mu.Unlock()
		notify(ev)
	})
}

func (r *recorder) set(f func(discovery.Event)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.f = f
	for _, ev := range r.missed {
		f(ev)
	}
	r.missed = nil
}
